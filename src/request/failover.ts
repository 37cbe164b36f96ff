/**
 * Failover and retries: the targets of a route in the order src/state/health.ts plans, the pool key
 * each attempt sends, and what a failure means (move on, rotate the key, or give up).
 */
import { DEFAULT_RETRY, type ProviderConfig } from "../config/config.ts";
import type { RequestContext } from "./context.ts";
import { GatewayError } from "../kit/errors.ts";
import { logEvent } from "../ops/log.ts";
import { ClientGone } from "./stream_end.ts";
import type { Resolved } from "./router.ts";
import type { PoolKey } from "../state/health.ts";
import type { Pin } from "./pins.ts";

/** An HTTP date in its one current form (IMF-fixdate, RFC 9110 section 5.6.7). */
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * How long a provider asked us to wait: `retry-after-ms` (a non-negative number), else
 * `retry-after` as non-negative integer seconds or an HTTP date in the future. Anything else
 * (`-5`, `1e308`, `Infinity`, a past date) is no hint at all. Not capped: callers cap it.
 */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = headers?.get("retry-after-ms")?.trim();
  if (ms && /^\d{1,15}(\.\d+)?$/.test(ms)) return Number(ms);
  const after = headers?.get("retry-after")?.trim();
  if (!after) return undefined;
  if (/^\d{1,15}$/.test(after)) return Number(after) * 1000;
  if (!HTTP_DATE.test(after)) return undefined;
  const wait = Date.parse(after) - now;
  return wait > 0 ? wait : undefined;
}

/** The pause before sending to a target again in the same request: 100–200 ms, jittered. */
const backoffMs = () => 100 + Math.random() * 100;

/** What a failed attempt means for the request. */
type Verdict = "retry" | "key" | "final";

/** The provider refused the gateway's own credential (never the client's: it is not sent). */
const refusedCredential = (e: GatewayError) => e.status === 401 || e.status === 403;

/** `on`: the statuses and error kinds the route retries. */
function verdict(e: GatewayError, on: (number | string)[], transport: boolean): Verdict {
  // Not even a transport failure is retried where whoever failed knows no attempt may help.
  if (transport) return e.retry === false ? "final" : "retry";
  if (refusedCredential(e)) return "key";
  if (e.retry !== undefined) return e.retry ? "retry" : "final";
  return on.includes(e.status) || on.includes(e.kind) ? "retry" : "final";
}

export interface Attempt<T> {
  /**
   * Runs one attempt on a target; throws a GatewayError to fail it. `last`: no other attempt
   * would follow (a stream then need not hold its opening back).
   */
  run(r: Resolved, key: PoolKey | undefined, last: boolean): Promise<T>;
  /** Targets that can serve this request at all (provider-bound state); default: all. */
  eligible?: (r: Resolved) => boolean;
  /** Why targets were left out by `eligible`, for the error when none is left. */
  bound?: string;
  /**
   * The account the request must reach first (src/request/pins.ts): its provider's target leads, with
   * the pinned pool key; the others stay behind it as usual.
   */
  pin?: Promise<Pin | undefined>;
}

/**
 * An attempt the provider refused (its status counts), as opposed to a transport failure;
 * `answer`: the provider's own error, relayed as is if it is the last.
 */
export class ProviderFailure extends GatewayError {
  constructor(e: GatewayError, readonly answer?: Response, headers = e.headers) {
    super(e.status, e.kind, e.message, e.param, headers, e.code);
    this.retry = e.retry;
  }
}

/**
 * Tries a route's targets until one answers: each at most once (again only with another pool
 * key, or after a retry-after short enough to wait for), at most `retry.attempts` upstream
 * calls in all. A target that cannot express the request (a 400 before any call) is skipped
 * without counting. Responses get `x-gateway-provider` / `x-gateway-attempts`, and so does the
 * last error, thrown when every target failed (a relayed one carries its `answer`).
 */
export async function failover<T>(
  ctx: RequestContext,
  r: Resolved,
  attempt: Attempt<T>,
): Promise<T> {
  const health = ctx.gw.router.health;
  const retry = r.route.retry ?? DEFAULT_RETRY;
  const cooldown = r.route.cooldown ?? ctx.gw.config.cooldown;
  // Only a continuation waits for its pin (a message to the supervisor, under workers).
  const pin = attempt.pin && await attempt.pin;
  const order = pin ? pinnedFirst(health.plan(r.targets), pin) : health.plan(r.targets);
  const all = order.length === 1 ? [r] : order.map((t) => r.to(t));
  const queue = all.filter((t) => attempt.eligible?.(t) ?? true);
  const skipped = all.length - queue.length;
  if (queue.length === 0) {
    throw new GatewayError(
      400,
      "invalid_request",
      `${attempt.bound}; no target of route "${r.name}" can read it`,
    );
  }
  const trace = ctx.trace;
  let last: GatewayError | undefined;
  let unexpressible: GatewayError | undefined;
  let waited = 0;
  let told: GatewayError | undefined;
  /** Providers that answered 429 in this request: another 429 there is provider-wide. */
  let limited: Set<string> | undefined;
  while (queue.length > 0 && trace.attempts < retry.attempts) {
    const t = queue.shift()!;
    // The failed attempt before this one is told now, under its own provider's name.
    if (told !== last && last) trace.attemptFailed(last.status, last.kind);
    told = last;
    // The pin holds for its target's first try (a retry rotates on as usual).
    const key = (pin && trace.attempts === 0 && pinnedKey(t.provider, pin)) ||
      health.key(t.provider);
    trace.target(r.requested, t);
    trace.providerKey = key?.name;
    const before = trace.attempts;
    const lastOne = queue.length === 0 || before + 1 >= retry.attempts;
    try {
      const out = await attempt.run(t, key, lastOne);
      health.succeeded(t.provider.name);
      if (out instanceof Response) gatewayHeaders(out.headers, t.provider.name, trace.attempts);
      return out;
    } catch (e) {
      if (!(e instanceof GatewayError)) throw e;
      if (trace.attempts === before) {
        // Nothing was sent: the target cannot express the request (or the gateway stops).
        if (e.status !== 400) throw e;
        unexpressible ??= e;
        continue;
      }
      const v = verdict(e, retry.on, !(e instanceof ProviderFailure));
      if (last instanceof ProviderFailure) await last.answer?.body?.cancel();
      last = e;
      if (v === "key") keyRefused(ctx, t.provider.name, key, e.status);
      if (v === "final") break;
      const hint = retryAfterMs(e.headers);
      const wait = hint === undefined ? undefined : Math.min(hint, cooldown.max_seconds * 1000);
      if ((v === "key" || e.status === 429) && key) {
        health.coolKey(t.provider, key, wait ?? cooldown.seconds * 1000);
        // Another key of the pool may well succeed on the same deployment, unless a second key
        // got a 429 too: then the limit is the provider's, not the key's.
        const providerWide = e.status === 429 && !!limited?.has(t.provider.name);
        if (e.status === 429) (limited ??= new Set()).add(t.provider.name);
        if (!providerWide && health.hasOtherKey(t.provider, key)) {
          await sleep(backoffMs(), ctx.req.signal);
          queue.unshift(t);
          continue;
        }
      }
      health.failed(t.provider.name, cooldown, wait);
      // Nothing else left: the same target again, after its retry-after (at least the backoff).
      const pause = wait === undefined ? Infinity : Math.max(wait, backoffMs());
      if (queue.length === 0 && waited + pause <= retry.max_wait_s * 1000) {
        waited += pause;
        await sleep(pause, ctx.req.signal);
        queue.push(t);
      }
    }
  }
  // A refused credential is the operator's to fix: the client must not hear "invalid API key".
  const err = last instanceof ProviderFailure && refusedCredential(last)
    ? await credentialRefused(last, trace.provider!)
    : last ?? unexpressible!;
  // Said in the client's dialect when targets were left out, so the reason is not lost.
  if (last && skipped > 0) err.message += ` (${skipped} other target(s) skipped: ${attempt.bound})`;
  const relayed = err instanceof ProviderFailure && skipped === 0 ? err.answer : undefined;
  const headers = relayed?.headers ?? new Headers(err.headers);
  gatewayHeaders(headers, trace.provider, trace.attempts);
  if (relayed) throw new ProviderFailure(err, relayed, headers);
  await (err as ProviderFailure).answer?.body?.cancel();
  throw new GatewayError(err.status, err.kind, err.message, err.param, headers, err.code);
}

/** The targets in `order` with the pin's provider's first. */
function pinnedFirst<T extends { provider: { name: string } }>(order: readonly T[], pin: Pin) {
  const at = order.findIndex((t) => t.provider.name === pin.provider);
  return at <= 0 ? order : [order[at], ...order.slice(0, at), ...order.slice(at + 1)];
}

/** Names the key the provider refused (by pool index, never its value) for the operator. */
function keyRefused(
  ctx: RequestContext,
  provider: string,
  key: PoolKey | undefined,
  status: number,
) {
  logEvent({
    msg: "provider_key_refused",
    request_id: ctx.requestId,
    provider,
    provider_key: key?.name ?? null,
    status,
  }, ctx.gw.secrets);
}

/** The 502 a client gets when the provider refused every credential the gateway has. */
async function credentialRefused(e: ProviderFailure, provider: string): Promise<GatewayError> {
  await e.answer?.body?.cancel();
  const message = `provider \`${provider}\` rejected the gateway's credential (HTTP ${e.status})`;
  return new GatewayError(502, "upstream", message);
}

function gatewayHeaders(h: Headers, provider: string | undefined, attempts: number) {
  if (provider) h.set("x-gateway-provider", provider);
  h.set("x-gateway-attempts", String(attempts));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new ClientGone());
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", gone);
      resolve();
    };
    const gone = () => {
      clearTimeout(timer);
      reject(new ClientGone());
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", gone, { once: true });
  });
}

/**
 * The pool key `pin` names for `provider`, cooling or not (a request that must reach that
 * account has no other); undefined when it names none of this pool.
 */
function pinnedKey(provider: ProviderConfig, pin: Pin): PoolKey | undefined {
  const index = pin.provider === provider.name ? pin.key : undefined;
  const pool = provider.api_keys ?? (provider.api_key ? [provider.api_key] : []);
  if (index === undefined || index >= pool.length) return undefined;
  return { value: pool[index], name: `${provider.name}#${index}`, index };
}
