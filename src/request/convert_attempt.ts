/**
 * Converted attempts: the client's request decoded to IR once, then for each target encoded in
 * the target's format, sent, and its answer decoded back to IR and encoded for the client.
 */
import type { Codec, IrSource } from "../kit/codec.ts";
import type { GenerationSpec } from "../kit/generation.ts";
import type * as ir from "../kit/ir.ts";
import { boundFamily } from "../kit/ir.ts";
import type { RequestContext } from "./context.ts";
import { answer, idFor, localId, nowSeconds } from "./answer.ts";
import { localIr, upstreamIr } from "./client_stream.ts";
import { DEMO_API } from "../config/config.ts";
import { demoResponse, demoStream } from "./demo.ts";
import { type Attempt, ProviderFailure } from "./failover.ts";
import type { PoolKey } from "../state/health.ts";
import { holdOpening } from "./hold_opening.ts";
import { breather, isLarge } from "../kit/http.ts";
import { checkNesting } from "../kit/nesting.ts";
import { callUpstream, type UpstreamResponse } from "./relay.ts";
import { answerUsage, readUpstreamJson, upstreamError } from "./upstream_body.ts";
import { throughPlatform } from "./platform_call.ts";
import type { Resolved } from "./router.ts";
import { EventReader, framingOf } from "./stream_stage.ts";

/**
 * The client's request as IR, decoded once before any target: the client's own mistakes are
 * nobody's to retry. The stream flag comes from the endpoint (Gemini carries it in the path).
 */
async function decodeOnce(ctx: RequestContext, spec: GenerationSpec): Promise<ir.Request> {
  const large = isLarge(spec.body.raw.length);
  if (large) await breather();
  checkNesting(spec.body.json);
  const req = { ...spec.ingress.decodeRequest(spec.body.json, spec.model), stream: spec.stream };
  ctx.trace.compaction = req.compaction === true;
  if (large) await breather();
  return req;
}

/**
 * Signatures and encrypted reasoning are readable only by the family that issued them: such a
 * conversation stays on the route's targets of that family (if it has any; a route that
 * converts on purpose keeps converting).
 */
function familyBound(
  ctx: RequestContext,
  r: Resolved,
  req: ir.Request,
): Pick<Attempt<unknown>, "eligible" | "bound"> {
  const family = boundFamily(req);
  const { formats } = ctx.gw;
  // A platform serving several families says which one a model is.
  const familyOf = (p: Resolved["provider"], model: string) =>
    formats.platforms.family(p, model) ?? formats.family(p.api);
  if (!family || !r.targets.some((t) => familyOf(t.provider, t.model ?? r.requested) === family)) {
    return {};
  }
  return {
    eligible: (t) => familyOf(t.provider, t.upstreamModel) === family,
    bound: `the conversation carries ${family} signatures or reasoning`,
  };
}

/**
 * Attempts for a request decoded to IR (once, for every target): each encoded for its target,
 * or answered here by the demo provider, and answered in the client's format.
 */
export async function converting(
  ctx: RequestContext,
  spec: GenerationSpec,
  r: Resolved,
): Promise<Attempt<Response>> {
  const req = await decodeOnce(ctx, spec);
  const large = isLarge(spec.body.raw.length);
  return {
    ...familyBound(ctx, r, req),
    run: async (t, key, last) =>
      answer(ctx, spec, await irFrom(ctx, t, key, last, req, large), req),
  };
}

/**
 * Attempts that yield a converted stream's IR events, for a client that encodes them itself
 * (the Responses WebSocket).
 */
export function convertingEvents(
  ctx: RequestContext,
  r: Resolved,
  req: ir.Request,
): Attempt<IrSource> {
  return {
    ...familyBound(ctx, r, req),
    // A streaming request's answer is a stream.
    run: (t, key, last) => irFrom(ctx, t, key, last, req) as Promise<IrSource>,
  };
}

/**
 * One attempt's answer as IR: made here by the demo provider, else the target's call decoded —
 * a stream held until its content starts, unless no other attempt could follow.
 */
async function irFrom(
  ctx: RequestContext,
  r: Resolved,
  key: PoolKey | undefined,
  last: boolean,
  req: ir.Request,
  /** A large request: other requests run between encoding it and serializing it. */
  large = false,
): Promise<ir.Response | IrSource> {
  // An earlier attempt's dropped hints are not this answer's.
  ctx.trace.dropped = undefined;
  if (r.provider.api === DEMO_API) {
    ctx.trace.routed("local");
    const { id, now } = localId(ctx);
    return req.stream ? localIr(demoStream(req, id, now)) : demoResponse(req, id, now);
  }
  const up = await callConverted(ctx, r, key, req, large);
  const customTools = req.tools?.filter((t) => t.kind === "custom").map((t) => t.name);
  const dctx = { now: nowSeconds(), id: idFor(ctx), customTools };
  if (!up.framing) {
    const { json } = await readUpstreamJson(up, r.provider, ctx.gw.secrets);
    const res = up.target.decodeResponse(json, dctx);
    const usage = answerUsage(up, res.usage);
    return usage ? { ...res, usage } : res;
  }
  const reader = new EventReader(up, r.provider.timeouts, up.framing, ctx.gw.secrets);
  const source = upstreamIr(reader, up.target.decodeStream(dctx));
  return last ? source : await holdOpening(source, (batch) => Promise.resolve(batch));
}

/** A converted call's response, with what it needs to be read. */
type Called = UpstreamResponse & { target: Codec };

/** Calls a provider of another format with the IR request; throws its errors re-wrapped. */
async function callConverted(
  ctx: RequestContext,
  r: Resolved,
  key: PoolKey | undefined,
  req: ir.Request,
  /** A large request: other requests run between encoding it and serializing it. */
  large = false,
): Promise<Called> {
  const target = ctx.gw.formats.codec(r.provider.api);
  const spec = ctx.gw.formats.upstream(r.provider.api)!;
  const dropped: string[] = [];
  const body = target.encodeRequest(req, {
    model: r.upstreamModel,
    route: r.label,
    defaultMaxTokens: r.route.default_max_tokens ?? r.provider.default_max_tokens,
    dropped,
    hostedTools: r.route.hosted_tools,
  });
  if (dropped.length) ctx.trace.dropped = [...new Set(dropped)];
  const path = target.path(r.upstreamModel, req.stream);
  const platform = throughPlatform(ctx, r, body, req.stream, "generate", path);
  if (large) await breather();
  const text = JSON.stringify(body);
  if (large) await breather();
  ctx.trace.routed("convert");
  ctx.trace.attempt();
  ctx.trace.sentChars = text.length;
  const up = await callUpstream({
    provider: r.provider,
    spec,
    key: key?.value,
    path,
    body: text,
    signal: ctx.req.signal,
    stopping: ctx.gw.stopping,
    platform,
    framing: req.stream ? framingOf(spec) : undefined,
  });
  if (!up.res.ok) {
    const { idle_ms } = r.provider.timeouts;
    throw new ProviderFailure(await upstreamError(up, idle_ms, ctx.gw.secrets, spec));
  }
  return { ...up, target };
}
