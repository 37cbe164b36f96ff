/**
 * Converted attempts: the client's request decoded to IR once, then for each target encoded in
 * the target's format, sent, and its answer decoded back to IR and encoded for the client.
 */
import type { Codec, DecodeContext, IrSource } from "../kit/codec.ts";
import type { UpstreamSpec } from "../kit/format.ts";
import type { GenerationSpec } from "../kit/generation.ts";
import type * as ir from "../kit/ir.ts";
import { boundFamily } from "../kit/ir.ts";
import type { RequestContext } from "./context.ts";
import { answer, idFor, localId, localSource, nowSeconds } from "./answer.ts";
import { localIr, upstreamIr } from "./client_stream.ts";
import { DEFAULT_LONG_DECODE, DEMO_API } from "../config/config.ts";
import { demoResponse, demoStream } from "./demo.ts";
import { type Attempt, ProviderFailure } from "./failover.ts";
import type { PoolKey } from "../state/health.ts";
import { holdOpening } from "./hold_opening.ts";
import { breather, isLarge } from "../kit/http.ts";
import { continued, type Hops, whole } from "./long_decode.ts";
import { checkNesting } from "../kit/nesting.ts";
import { callUpstream, type UpstreamResponse } from "./relay.ts";
import { readUpstreamJson, upstreamError } from "./upstream_body.ts";
import { billed, billedEvent } from "./usage.ts";
import { throughPlatform } from "./platform_call.ts";
import type { Resolved } from "./router.ts";
import { framingOf } from "./stream_stage.ts";
import { EventReader } from "./upstream_events.ts";

/**
 * The client's request as IR, decoded once before any target: the client's own mistakes are
 * nobody's to retry. The stream flag comes from the endpoint (Gemini carries it in the path).
 */
async function decodeOnce(ctx: RequestContext, spec: GenerationSpec): Promise<ir.Request> {
  const large = isLarge(spec.body.raw.length);
  if (large) await breather();
  checkNesting(spec.body.json);
  const req = { ...spec.ingress.decodeRequest(spec.body.json, spec.model), stream: spec.stream };
  if (large) await breather();
  return compactionBounded(ctx, req);
}

/**
 * The most a compaction may write: a summary of the conversation (about 3,000 words), not an
 * answer of any length at no charge (docs/limits.md).
 */
export const COMPACTION_MAX_TOKENS = 4096;

/**
 * Codex's in-band compaction (a converted request ending with `compaction_trigger`), marked on
 * the trace (its tokens count toward token limits, not spend) and its output bounded.
 */
export function compactionBounded(ctx: RequestContext, req: ir.Request): ir.Request {
  ctx.trace.compaction = req.compaction === true;
  if (!req.compaction) return req;
  return { ...req, maxTokens: Math.min(req.maxTokens ?? Infinity, COMPACTION_MAX_TOKENS) };
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
 * a stream held until its content starts, unless no other attempt could follow — and, where
 * the target continues long answers across requests, its hops joined (long_decode.ts).
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
  const call = encodeConverted(ctx, r, req);
  const customTools = req.tools?.filter((t) => t.kind === "custom").map((t) => t.name);
  const dctx = { now: nowSeconds(), id: idFor(ctx), customTools };
  const up = await sendConverted(ctx, r, key, call, call.body, large, false);
  const { longDecode } = call.target;
  const hops = longDecode && longDecodeOf(r).mode === "auto"
    ? hopsOf(ctx, r, req, async (token) => {
      const body = longDecode.resume(call.body, token);
      const next = await sendConverted(ctx, r, key, call, body, large, true);
      return answerEvents(ctx, r, call, dctx, next);
    })
    : undefined;
  if (!up.framing) {
    const res = await readAnswer(ctx, r, call, dctx, up);
    // Only an answer that goes on pays for joining hops.
    if (!hops || res.continuation === undefined) return res;
    return await whole(continued(localSource(res), hops));
  }
  const first = await answerEvents(ctx, r, call, dctx, up);
  const source = hops ? continued(first, hops) : first;
  // A client asking for a whole answer whose budget only a stream may take.
  if (!req.stream) return await whole(source);
  return last ? source : await holdOpening(source, (batch) => Promise.resolve(batch));
}

/** One call's answer as events: its stream decoded as it arrives, or a whole one read. */
async function answerEvents(
  ctx: RequestContext,
  r: Resolved,
  call: Encoded,
  dctx: DecodeContext,
  up: UpstreamResponse,
): Promise<IrSource> {
  if (!up.framing) return localSource(await readAnswer(ctx, r, call, dctx, up));
  const reader = new EventReader(up, r.provider.timeouts, up.framing, ctx.gw.secrets);
  return upstreamIr(reader, call.target.decodeStream(dctx), billedEvent(up.platform));
}

const longDecodeOf = (r: Resolved) => r.route.long_decode ?? DEFAULT_LONG_DECODE;

/** The route's hops for one converted answer: `resend` sends its request again with a token. */
function hopsOf(
  ctx: RequestContext,
  r: Resolved,
  req: ir.Request,
  resend: (token: string) => Promise<IrSource>,
): Hops {
  return {
    open(token) {
      ctx.trace.hops++;
      return resend(token);
    },
    max: longDecodeOf(r).max_hops,
    budget: req.maxTokens,
    spent: (usage) => ctx.trace.reportUsage(usage),
  };
}

/** A whole converted answer, decoded (with the platform's own usage counts, if it has them). */
async function readAnswer(
  ctx: RequestContext,
  r: Resolved,
  call: Encoded,
  dctx: DecodeContext,
  up: UpstreamResponse,
): Promise<ir.Response> {
  const { json } = await readUpstreamJson(up, r.provider, ctx.gw.secrets);
  const res = call.target.decodeResponse(json, dctx);
  const usage = billed(up.platform, { json: [json], headers: up.res.headers }, res.usage);
  return usage ? { ...res, usage } : res;
}

/** A converted request as one target's body, sent once per hop. */
interface Encoded {
  target: Codec;
  spec: UpstreamSpec;
  body: Record<string, unknown>;
  /** Whether it streams upstream: the client's choice, or a budget above the unary limit. */
  stream: boolean;
  path: string;
}

/** The IR request in the target's format (a 400, before any call, if it cannot say it). */
function encodeConverted(ctx: RequestContext, r: Resolved, req: ir.Request): Encoded {
  const target = ctx.gw.formats.codec(r.provider.api);
  const spec = ctx.gw.formats.upstream(r.provider.api)!;
  const limit = target.longDecode?.unaryLimit;
  const stream = req.stream || (limit !== undefined && (req.maxTokens ?? 0) > limit);
  const dropped: string[] = [];
  const body = target.encodeRequest(stream === req.stream ? req : { ...req, stream }, {
    model: r.upstreamModel,
    route: r.label,
    defaultMaxTokens: r.route.default_max_tokens ?? r.provider.default_max_tokens,
    dropped,
    hostedTools: r.route.hosted_tools,
  });
  if (dropped.length) ctx.trace.dropped = [...new Set(dropped)];
  return { target, spec, body, stream, path: target.path(r.upstreamModel, stream) };
}

/** Sends a converted request's body to its target; throws its errors re-wrapped. */
async function sendConverted(
  ctx: RequestContext,
  r: Resolved,
  key: PoolKey | undefined,
  call: Encoded,
  body: Record<string, unknown>,
  /** A large request: other requests run between encoding it and serializing it. */
  large: boolean,
  /** A long decode's later hop: part of the attempt already counted. */
  hop: boolean,
): Promise<UpstreamResponse> {
  const { spec, stream, path } = call;
  const platform = throughPlatform(ctx, r, body, stream, "generate", path);
  if (large) await breather();
  const text = JSON.stringify(body);
  if (large) await breather();
  if (!hop) {
    ctx.trace.routed("convert");
    ctx.trace.attempt();
    ctx.trace.sentChars = text.length;
  }
  const up = await callUpstream({
    provider: r.provider,
    spec,
    key: key?.value,
    path,
    body: text,
    signal: ctx.req.signal,
    stopping: ctx.gw.stopping,
    platform,
    framing: stream ? framingOf(spec) : undefined,
  });
  if (!up.res.ok) {
    const { idle_ms } = r.provider.timeouts;
    throw new ProviderFailure(await upstreamError(up, idle_ms, ctx.gw.secrets, spec));
  }
  return up;
}
