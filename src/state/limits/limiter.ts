/**
 * Enforces identities' limits: a request is admitted (and counted as a request) before any
 * upstream call, or refused with a 429 in the client's dialect; its tokens and spend are
 * counted when its usage is known, at the trace's end. One limiter per gateway, across
 * reloads; each request brings the policy of its own config snapshot.
 */
import { GatewayError } from "../../kit/errors.ts";
import type { Dialect, RateLimitState, RateLimitWindow } from "../../kit/format.ts";
import type { Metrics } from "../../ops/metrics.ts";
import type { Observer, Trace } from "../../ops/trace.ts";
import type { Identity, LimitPolicy } from "./policy.ts";
import type { Limits, LimitsStoreConfig } from "../../config/limits.ts";
import type { LimitStore } from "./store.ts";
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
  identity: string;
  limits: Limits;
  windows: Windows;
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
    const { refused, windows } = admitted;
    if (refused) {
      this.metrics.limitRejections.add([identity.name, refused]);
      throw this.refusal(identity, refused, windows, dialect, now);
    }
    this.admitted.set(t, { identity: identity.name, limits, windows });
  }

  /** The 429 of a refused request: the limit by name, when it frees, and the headers. */
  private refusal(
    identity: Identity,
    name: LimitName,
    windows: Windows,
    dialect: Dialect,
    now: number,
  ): GatewayError {
    const { reset } = windows[name];
    const seconds = Math.max(1, Math.ceil((reset - now) / 1000));
    const headers = new Headers(
      dialect.rateLimitHeaders?.(headerState(identity.limits!, windows), now),
    );
    headers.set("retry-after", String(seconds));
    // The SDKs honour a retry-after of a minute at most, and retry sooner by themselves: past
    // that, such retries cannot succeed, so they are told not to (OpenAI's and Anthropic's read it).
    if (seconds > 60) headers.set("x-should-retry", "false");
    const message = `${identity.name} has reached its limit ${name} (${identity.limits![name]} ${
      UNITS[name]
    }); it frees at ${new Date(reset).toISOString()} (in ${seconds}s)`;
    const code = BUDGETS.includes(name) ? "insufficient_quota" : "rate_limit_exceeded";
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

  /** Counts the answer's tokens and spend once it is complete (its usage final). */
  ended(t: Trace): void {
    const a = this.admitted.get(t);
    const policy = this.policy();
    const u = t.usage;
    if (!u || (!a && !policy.priced) || !t.billable) return;
    const spend = this.spend(policy, t);
    if (!a) return;
    const tokens = u.inputTokens + u.outputTokens;
    a.recorded = this.store.record(a.identity, a.limits, tokens, spend, this.now()).then(
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
    this.metrics.spend.add([t.key ?? "", t.provider ?? "", this.metrics.modelLabel(model)], usd);
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
