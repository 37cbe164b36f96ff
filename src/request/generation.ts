/**
 * The path of one generation request, in one place: route the model once, then try the route's
 * targets (failover), each attempt relayed (the provider speaks the client's format: bytes in,
 * bytes out) or converted through the IR, and answer with the first that succeeds — or with the
 * last target's own error. Endpoints only declare a `GenerationSpec`.
 */
import type { IrSource } from "../kit/codec.ts";
import type { GenerationSpec, OtherEndpoint } from "../kit/generation.ts";
import type * as ir from "../kit/ir.ts";
import type { RequestContext } from "./context.ts";
import { compactionBounded, converting, convertingEvents } from "./convert_attempt.ts";
import { type Attempt, failover, ProviderFailure } from "./failover.ts";
import { checkModelName } from "../kit/http.ts";
import { relaying } from "./relay_attempt.ts";
import type { Resolved, Target } from "./router.ts";
import { DEFAULT_OUTPUT_TOKENS, tokensFor } from "../ops/estimate.ts";

/** The route a model resolves to (resolved once per request; errors name the model). */
export function route(ctx: RequestContext, model: string): Resolved {
  const r = ctx.gw.router.resolve(checkModelName(model));
  ctx.trace.target(model, r);
  return r;
}

/**
 * Runs a generation: every target relays (`via: { relayOnly }`, or all speak the client's
 * format), or the request is decoded to IR once and each target is relayed or converted. Not
 * itself async: a relayed answer comes back through fewer promise layers, each a turn of the
 * microtask queue per request. A route error throws at once.
 */
export function generate(
  ctx: RequestContext,
  spec: GenerationSpec,
  r: Resolved = route(ctx, spec.model),
): Promise<Response> {
  const held = reserve(ctx, spec);
  const go = () => run(ctx, spec, r);
  return held ? held.then(go) : go();
}

/**
 * Holds tokens for the answer of an identity that a token window limits, before any upstream
 * call: the body's estimate and the output it allows (docs/limits.md); undefined for others.
 */
function reserve(ctx: RequestContext, { body, ingress }: Pick<GenerationSpec, "body" | "ingress">) {
  // Only an admitted identity (one with limits) may hold any: the others skip the lookup.
  if (!ctx.identity?.limits) return undefined;
  return ctx.gw.limiter.reserve(
    ctx.trace,
    () => tokensFor(body.raw.length) + (ingress.outputCap?.(body.json) ?? DEFAULT_OUTPUT_TOKENS),
    ctx.dialect,
  );
}

const CONTINUES = "a continuation token is good only at the provider that issued it";

function run(ctx: RequestContext, spec: GenerationSpec, r: Resolved): Promise<Response> {
  const via = spec.via ?? "auto";
  const relayOnly = typeof via === "object" ? via.relayOnly : undefined;
  const relays = (t: Pick<Target, "provider">) =>
    via === "auto" && t.provider.api === spec.ingress.api;
  if (relayOnly !== undefined || r.targets.every(relays)) {
    return attempt(ctx, r, relaying(ctx, spec, relayOnly));
  }
  // A continuation (long decode) is good only at the provider that issued its token: on a route
  // that also converts, it goes to the targets that relay (pinned), never to another family.
  if (r.targets.some(relays) && spec.ingress.longDecode?.resumes(spec.body.json) !== undefined) {
    return attempt(ctx, r, relaying(ctx, spec, CONTINUES));
  }
  const relayed = relaying(ctx, spec);
  return converting(ctx, spec, r).then((converted) =>
    attempt(ctx, r, {
      ...converted,
      run: (t, ...rest) => (relays(t) ? relayed : converted).run(t, ...rest),
    })
  );
}

/**
 * Another endpoint of the client's API (compact, count_tokens), relayed as is to the route's
 * targets of that API, failing over among them.
 */
export function relayed(ctx: RequestContext, other: OtherEndpoint, r: Resolved): Promise<Response> {
  const spec = { ingress: other.ingress, body: other.body, stream: false, headers: other.headers };
  const run = () => attempt(ctx, r, relaying(ctx, spec, other.why, other));
  const held = reserve(ctx, spec);
  return held ? held.then(run) : run();
}

/**
 * The route's targets tried in turn; the first success answers, else the last target's own
 * error when it was relayed (a provider's JSON error body), else the gateway's.
 */
function attempt(ctx: RequestContext, r: Resolved, each: Attempt<Response>): Promise<Response> {
  return answering(ctx, failover(ctx, r, each));
}

/** The last target's own error when it was relayed (a provider's JSON error body). */
async function answering(ctx: RequestContext, tried: Promise<Response>): Promise<Response> {
  try {
    return await tried;
  } catch (e) {
    if (!(e instanceof ProviderFailure && e.answer)) throw e;
    ctx.trace.failed(e.kind, e.message);
    return e.answer;
  }
}

/**
 * A converted stream's IR events for a client that encodes them itself (the Responses
 * WebSocket), failing over like an HTTP request until the stream's content starts.
 */
export async function convertedEvents(
  ctx: RequestContext,
  r: Resolved,
  req: ir.Request,
): Promise<IrSource> {
  return await failover(ctx, r, convertingEvents(ctx, r, compactionBounded(ctx, req)));
}
