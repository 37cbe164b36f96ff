/**
 * Converted attempts: the client's request decoded to IR once, then for each target encoded in
 * the target's format, sent, and its answer decoded back to IR and encoded for the client.
 */
import type { ClientContext, Codec, DecodeContext } from "./contract/codec.ts";
import type { UpstreamFraming } from "./contract/framing.ts";
import type { GenerationSpec } from "./contract/generation.ts";
import type * as ir from "./contract/ir.ts";
import { boundFamily } from "./contract/ir.ts";
import type { RequestContext } from "./context.ts";
import { answer, clientContext, idFor, nowSeconds } from "./answer.ts";
import { type IrSource, localIr, upstreamIr } from "./client_stream.ts";
import { DEMO_API } from "./config.ts";
import { demoResponse, demoStream } from "./demo.ts";
import { type Attempt, ProviderFailure } from "./failover.ts";
import type { PoolKey } from "./health.ts";
import { holdOpening } from "./hold_opening.ts";
import { breather, isLarge } from "./http.ts";
import { checkNesting } from "./nesting.ts";
import {
  callUpstream,
  checkContentType,
  JSON_TYPE,
  readUpstreamJson,
  upstreamError,
  type UpstreamResponse,
} from "./relay.ts";
import { relayAttempt } from "./relay_attempt.ts";
import { throughPlatform } from "./platform_call.ts";
import { answerUsage, platformFraming } from "./platforms.ts";
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
 * Attempts for a request decoded to IR (once, for every target): converted for targets of
 * another format, relayed as is where `relays` says the target speaks the client's format,
 * answered here by the demo provider.
 */
export async function converting(
  ctx: RequestContext,
  spec: GenerationSpec,
  r: Resolved,
  relays: (t: Resolved) => boolean,
): Promise<Attempt<Response>> {
  const req = await decodeOnce(ctx, spec);
  const client = clientContext(spec, req);
  return {
    ...familyBound(ctx, r, req),
    run: (t, key, last) =>
      relays(t)
        ? relayAttempt(ctx, spec, t, key, last)
        : t.provider.api === DEMO_API
        ? Promise.resolve(demoAnswer(ctx, spec, client, req))
        : convertAttempt(ctx, spec, client, t, key, last, req),
  };
}

/** One converted attempt on one target (a stream is returned once its content starts). */
async function convertAttempt(
  ctx: RequestContext,
  spec: GenerationSpec,
  client: ClientContext,
  r: Resolved,
  key: PoolKey | undefined,
  last: boolean,
  req: ir.Request,
): Promise<Response> {
  const up = await callConverted(ctx, r, key, req, isLarge(spec.body.raw.length));
  const dctx = decodeContext(ctx, req);
  const from = spec.stream
    ? await held(upstreamIrOf(ctx, r, up, dctx), last)
    : await decodedJson(ctx, r, up, dctx);
  return reportDropped(answer(ctx, spec, client, from), up.dropped);
}

async function decodedJson(
  ctx: RequestContext,
  r: Resolved,
  up: Called,
  dctx: DecodeContext,
): Promise<ir.Response> {
  const { json } = await readUpstreamJson(up, r.provider, ctx.gw.secrets);
  const res = up.target.decodeResponse(json, dctx);
  const usage = answerUsage(up, res.usage);
  return usage ? { ...res, usage } : res;
}

/** The demo provider answers here, without a call. */
function demoAnswer(
  ctx: RequestContext,
  spec: GenerationSpec,
  client: ClientContext,
  req: ir.Request,
): Response {
  ctx.trace.routed("local");
  const id = idFor(ctx);
  const now = nowSeconds();
  const from = spec.stream ? localIr(demoStream(req, id, now)) : demoResponse(req, id, now);
  return answer(ctx, spec, client, from);
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
    run: (t, key, last) => upstreamEvents(ctx, t, key, last, req),
  };
}

/**
 * Upstream IR events for one converted streaming attempt: held until the stream's content
 * starts, unless no other attempt could follow.
 */
async function upstreamEvents(
  ctx: RequestContext,
  r: Resolved,
  key: PoolKey | undefined,
  last: boolean,
  req: ir.Request,
): Promise<IrSource> {
  if (r.provider.api === DEMO_API) {
    ctx.trace.routed("local");
    return localIr(demoStream(req, idFor(ctx), nowSeconds()));
  }
  const up = await callConverted(ctx, r, key, req);
  return await held(upstreamIrOf(ctx, r, up, decodeContext(ctx, req)), last);
}

function decodeContext(ctx: RequestContext, req: ir.Request): DecodeContext {
  const customTools = req.tools?.filter((t) => t.kind === "custom").map((t) => t.name);
  return { now: nowSeconds(), id: idFor(ctx), customTools };
}

/** A converted call's response, with what it needs to be read. */
type Called = UpstreamResponse & { dropped: string[]; target: Codec; framing: UpstreamFraming };

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
  const up = await callUpstream({
    provider: r.provider,
    spec,
    key: key?.value,
    path,
    body: text,
    signal: ctx.req.signal,
    stopping: ctx.gw.stopping,
    platform,
  });
  if (!up.res.ok) {
    const { idle_ms } = r.provider.timeouts;
    throw new ProviderFailure(await upstreamError(up, idle_ms, ctx.gw.secrets, spec));
  }
  const framing = platformFraming(platform, framingOf(spec));
  checkContentType(up, req.stream ? framing.mediaType : JSON_TYPE);
  return { ...up, dropped, target, framing };
}

/** Names the sampling hints the target lacked, so the drop is never silent. */
function reportDropped(res: Response, dropped: string[]): Response {
  if (dropped.length) res.headers.set("x-gateway-dropped-params", [...new Set(dropped)].join(","));
  return res;
}

/** A converted stream's opening held back, unless no other attempt could follow. */
const held = (source: IrSource, last: boolean) =>
  last ? Promise.resolve(source) : holdOpening(source, (batch) => Promise.resolve(batch));

/** A converted call's stream as IR events: read whole and scrubbed under its timeouts, decoded. */
function upstreamIrOf(
  ctx: RequestContext,
  r: Resolved,
  up: Called,
  dctx: DecodeContext,
): IrSource {
  const reader = new EventReader(up, r.provider.timeouts, up.framing, ctx.gw.secrets);
  return upstreamIr(reader, up.target.decodeStream(dctx));
}
