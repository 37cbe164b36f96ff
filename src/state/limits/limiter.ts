/**
 * Enforces identities' limits: a request is admitted (and counted as a request) before any
 * upstream call, or refused with a 429 in the client's dialect; where a token window limits it,
 * it holds a reservation until its tokens and spend are counted, when its usage is known, at the
 * trace's end. One limiter per gateway, across reloads; each request brings the policy of its
 * own config snapshot.
 */
import { GatewayError } from "../../kit/errors.ts";
import type { Dialect, RateLimitState, RateLimitWindow } from "../../kit/format.ts";
import type { Metrics } from "../../ops/metrics.ts";
import type { Observer, Trace } from "../../ops/trace.ts";
import type { Identity, LimitPolicy } from "./policy.ts";
import type { Limits, LimitsStoreConfig } from "../../config/limits.ts";
import { type LimitStore, type Reservation, tokenLimited } from "./store.ts";
import type { LimitName, Windows } from "./windows.ts";

/** Limits whose refusal means a budget is spent, not a pace exceeded (OpenAI's code differs). */
const BUDGETS: readonly LimitName[] = ["tokens_per_day", "spend_per_month_usd"];

const UNITS: Record<LimitName, string> = {
  requests_per_minute: "requests per minute",
  tokens_per_minute: "tokens per minute",
  tokens_per_day: "tokens per day (UTC)",
  spend_per_month_usd: "USD per month (UTC)",
};

/** The store could not be reached: a 503 naming it (`on_error: deny`, the usage endpoint). */
function limitsStoreUnavailable(name: string): GatewayError {
  return new GatewayError(503, "overloaded", `the limits store (${name}) is unavailable`);
}

/** Distinct unpriced models logged; past it, new ones are not (model names come from clients). */
const MAX_UNPRICED_LOGGED = 1000;

/** An admitted request's identity and limits, until its usage is counted. */
interface Admission {
  identity: Identity;
  limits: Limits;
  windows: Windows;
  /** When the store counted it (a refused reservation takes it back). */
  at: number;
  /** The tokens held for its answer until it is counted. */
  reserved?: Reservation;
  /** The counting of its usage, once started (JSON answers wait for it). */
  recorded?: Promise<void>;
}

/** `remaining` of a window: never negative (in-flight requests may overshoot a token limit). */
function window(limit: number | undefined, state: Windows[LimitName]): RateLimitWindow | undefined {
  if (limit === undefined) return undefined;
  return { limit, remaining: Math.max(0, limit - state.used), reset: state.reset };
}

/** What the rate-limit headers describe: requests per minute, and tokens per minute else per day. */
function headerState(limits: Limits, w: Windows): RateLimitState {
  return {
    requests: window(limits.requests_per_minute, w.requests_per_minute),
    tokens: window(limits.tokens_per_minute, w.tokens_per_minute) ??
      window(limits.tokens_per_day, w.tokens_per_day),
  };
}

export class Limiter implements Observer {
  private readonly admitted = new WeakMap<Trace, Admission>();
  private readonly unpriced = new Set<string>();
  private lastStoreError = 0;

  readonly store: LimitStore;

  constructor(
    makeStore: (onError: (e: unknown) => void) => LimitStore,
    private readonly cfg: LimitsStoreConfig,
    private readonly metrics: Metrics,
    /** The policy in force now, for traces that were never admitted (spend of the unlimited). */
    private readonly policy: () => LimitPolicy,
    private readonly now: () => number = Date.now,
  ) {
    this.store = makeStore((e) => this.storeFailed(e));
  }

  /**
   * Counts one request of `identity` (nothing for an unlimited one), or throws its refusal:
   * a 429 naming the limit, or a 503 if the store is down and `on_error` is `deny`.
   */
  async admit(t: Trace, identity: Identity, dialect: Dialect): Promise<void> {
    const { limits } = identity;
    if (!limits) return;
    const now = this.now();
    let admitted;
    try {
      admitted = await this.store.admit(identity.name, limits, now);
    } catch (e) {
      this.storeFailed(e);
      if (this.cfg.on_error === "deny") throw limitsStoreUnavailable(this.store.name);
      return;
    }
    const { refused, windows, at } = admitted;
    if (refused) {
      this.metrics.limitRejections.add([this.metrics.keyLabel(identity.name), refused]);
      throw this.refusal(identity, refused, windows, dialect, now);
    }
    this.admitted.set(t, { identity, limits, windows, at });
  }

  /**
   * Holds `estimate()` tokens for an admitted request's answer where a token window limits its
   * identity (else undefined: nothing to wait for), so that requests in flight together cannot
   * pass the window by more than one request's reservation; or throws its refusal, the window
   * reached counting them (the request then counts nothing). Token counting holds none.
   */
  reserve(t: Trace, estimate: () => number, dialect: Dialect): Promise<void> | undefined {
    const a = this.admitted.get(t);
    if (!a || a.reserved || !tokenLimited(a.limits) || !t.countsTokens) return undefined;
    return this.hold(t, a, estimate(), dialect);
  }

  private async hold(t: Trace, a: Admission, tokens: number, dialect: Dialect): Promise<void> {
    const r = { id: crypto.randomUUID(), tokens, admittedAt: a.at };
    const now = this.now();
    let held;
    try {
      held = await this.store.reserve(a.identity.name, a.limits, r, now);
    } catch (e) {
      this.storeFailed(e);
      if (this.cfg.on_error === "deny") throw limitsStoreUnavailable(this.store.name);
      return;
    }
    if (held.refused) {
      this.admitted.delete(t);
      this.metrics.limitRejections.add([this.metrics.keyLabel(a.identity.name), held.refused]);
      throw this.refusal(a.identity, held.refused, held.windows, dialect, now);
    }
    a.reserved = r;
    a.windows = held.windows;
  }

  /** The 429 of a refused request: the limit by name, when it frees, and the headers. */
  private refusal(
    identity: Identity,
    name: LimitName,
    windows: Windows,
    dialect: Dialect,
    now: number,
  ): GatewayError {
    const { reset, used, reserved } = windows[name];
    const limit = identity.limits![name]!;
    // Reached only with the tokens of requests in flight: a pace, freed as they end.
    const inFlight = reserved !== undefined && used - reserved < limit;
    const seconds = Math.max(1, Math.ceil((reset - now) / 1000));
    const headers = new Headers(
      dialect.rateLimitHeaders?.(headerState(identity.limits!, windows), now),
    );
    headers.set("retry-after", String(seconds));
    // The SDKs honour a retry-after of a minute at most, and retry sooner by themselves: past
    // that, such retries cannot succeed, so they are told not to (OpenAI's and Anthropic's read it).
    if (seconds > 60) headers.set("x-should-retry", "false");
    const held = inFlight ? ` with ${reserved} reserved by requests in flight` : "";
    const message = `${identity.name} has reached its limit ${name} (${limit} ${
      UNITS[name]
    })${held}; it frees at ${new Date(reset).toISOString()} (in ${seconds}s)`;
    const code = BUDGETS.includes(name) && !inFlight ? "insufficient_quota" : "rate_limit_exceeded";
    return new GatewayError(429, "rate_limit", message, undefined, headers, code);
  }

  /**
   * The rate-limit headers of an admitted request's answer, `remaining` counted after it (a
   * JSON answer's usage included: its counting is waited for).
   */
  async answered(t: Trace, dialect: Dialect, headers: Headers): Promise<void> {
    const a = this.admitted.get(t);
    if (!a || !dialect.rateLimitHeaders) return;
    await a.recorded;
    // A relayed answer carries none of the provider's own (FormatRegistry.responseHeaders).
    for (const [k, v] of dialect.rateLimitHeaders(headerState(a.limits, a.windows), this.now())) {
      headers.set(k, v);
    }
  }

  /** An identity's windows now (the usage endpoint); a 503 if the store is unreachable. */
  async read(identity: Identity): Promise<Windows> {
    try {
      return await this.store.read(identity.name, identity.limits ?? {}, this.now());
    } catch (e) {
      this.storeFailed(e);
      throw limitsStoreUnavailable(this.store.name);
    }
  }

  /**
   * Counts the answer's tokens (toward token limits: all but token counting's) and spend (of
   * billed answers) once it is complete (its usage final).
   */
  ended(t: Trace): void {
    const a = this.admitted.get(t);
    const u = t.usage;
    const spend = u && t.billable ? this.spend(this.policy(), t) : 0;
    if (!a) return;
    const tokens = u && t.countsTokens ? u.inputTokens + u.outputTokens : 0;
    // Nothing to count and nothing held (token counting, an error's answer).
    if (!a.reserved && !tokens && !(u && t.billable)) return;
    const now = this.now();
    const { identity, limits, reserved } = a;
    a.recorded = this.store.record(identity.name, limits, tokens, spend, now, reserved).then(
      (windows) => void (a.windows = windows),
      (e) => this.storeFailed(e),
    );
    t.counted = a.recorded;
  }

  /** The answer's USD by its upstream model's price (0 and logged once if it has none). */
  private spend(policy: LimitPolicy, t: Trace): number {
    const model = t.upstreamModel ?? t.model;
    if (!model || !policy.priced) return 0;
    const usd = policy.spend(model, t.usage!);
    if (usd === undefined) {
      if (!this.unpriced.has(model) && this.unpriced.size < MAX_UNPRICED_LOGGED) {
        this.unpriced.add(model);
        console.error(
          JSON.stringify({ level: "warn", msg: "unpriced model: no spend counted", model }),
        );
      }
      return 0;
    }
    const key = t.key ? this.metrics.keyLabel(t.key) : "";
    this.metrics.spend.add([key, t.provider ?? "", this.metrics.modelLabel(model)], usd);
    return usd;
  }

  /** At most one line a minute while the store fails; every failure is counted. */
  private storeFailed(e: unknown): void {
    this.metrics.limitsStoreErrors.add([this.store.name]);
    const now = Date.now();
    if (now - this.lastStoreError < 60_000) return;
    this.lastStoreError = now;
    const error = e instanceof Error ? e.message : "unknown error";
    console.error(JSON.stringify({
      level: "error",
      msg: "limits store unreachable",
      store: this.store.name,
      on_error: this.cfg.on_error,
      error,
    }));
  }
}
