/**
 * The path of one generation request: route by model, then either relay bytes (client format
 * = provider API) or convert through the IR (decode → encode upstream → decode upstream →
 * encode for the client), streams included.
 */
import type { ClientContext, Codec, DecodeContext, StreamStep } from "./contract/codec.ts";
import type { RequestContext } from "./context.ts";
import { demoResponse, demoStream } from "./demo.ts";
import {
  breather,
  checkModelName,
  headersFrom,
  isLarge,
  type JsonBody,
  pickHeaders,
  respond,
  STREAM_HEADERS,
} from "./http.ts";
import type * as ir from "./contract/ir.ts";
import { badRequest } from "./contract/errors.ts";
import { errorResponse } from "./error_response.ts";
import type { UpstreamSpec } from "./contract/format.ts";
import { DEMO_API } from "./config.ts";
import {
  callUpstream,
  checkContentType,
  JSON_TYPE,
  readErrorText,
  readProviderError,
  readUpstreamJson,
  upstreamError,
  upstreamHeaders,
  type UpstreamResponse,
} from "./relay.ts";
import { sseEnd, type StreamEnd } from "./stream_end.ts";
import type { Resolved } from "./router.ts";
import { type Attempt, failover, ProviderFailure } from "./failover.ts";
import { holdOpening } from "./hold_opening.ts";
import type { PoolKey } from "./health.ts";
import { boundFamily } from "./contract/ir.ts";
import { checkNesting } from "./nesting.ts";
import { formatSse, type SseEvent } from "./contract/sse.ts";
import type { UpstreamFraming } from "./contract/framing.ts";
import { EventReader, relayStream, sseFraming } from "./stream_stage.ts";
import { clientStream, type IrSource, localIr, upstreamIr } from "./client_stream.ts";
import type { Operation } from "./contract/platform.ts";
import { platformFraming, type PlatformRequest } from "./platforms.ts";

/** A non-SSE stream framing. */
export interface Framing {
  contentType: string;
  /** Converted streams: client events to wire text (one serializer per response). */
  serializer(): (e: SseEvent) => string;
  /** How a converted stream ends. */
  end: StreamEnd;
  /** A relayed stream's events and ending, for one response. */
  relayed(): UpstreamFraming;
}

export interface Generation {
  ingress: Codec;
  body: JsonBody;
  model: string;
  stream: boolean;
  /** Rules that depend on the route. */
  checkRoute?: (r: Resolved) => void;
  /** Build the response through the IR even when the provider speaks the client's format. */
  convert?: boolean;
  /** Passthrough upstream path when it is not `ingress.path()` (a stream in another framing). */
  passthroughPath?: (upstreamModel: string) => string;
  /** The client stream's framing when it is not SSE (and the relayed upstream's alike). */
  framing?: Framing;
  /**
   * Why the request must be relayed to providers of the client's format (state only they
   * keep, such as a previous response id); absent: it may convert.
   */
  providerState?: string;
  /** Extra client-encoder context from the endpoint (e.g. chat `streamUsage`). */
  client?: Omit<ClientContext, "model">;
}

export function resolveRoute(ctx: RequestContext, model: string): Resolved {
  const r = ctx.gw.router.resolve(checkModelName(model));
  ctx.trace.target(model, r);
  return r;
}

/**
 * Not itself async (nor is `passthrough`): a relayed answer comes back through fewer promise
 * layers, each a turn of the microtask queue per request. A route error throws at once.
 */
export function generate(ctx: RequestContext, g: Generation): Promise<Response> {
  const r = resolveRoute(ctx, g.model);
  g.checkRoute?.(r);
  const relays = (t: Pick<Resolved, "provider">) => t.provider.api === g.ingress.api && !g.convert;
  if (g.providerState || r.targets.every(relays)) return passthrough(ctx, g, r);
  return convertRoute(ctx, g, r, relays);
}

/** A route with a target of another format: the request decoded to IR once for every target. */
async function convertRoute(
  ctx: RequestContext,
  g: Generation,
  r: Resolved,
  relays: (t: Pick<Resolved, "provider">) => boolean,
): Promise<Response> {
  // Decoded once, before any target: the client's own mistakes are nobody's to retry.
  // The stream flag comes from the endpoint (Gemini carries it in the path, not the body).
  const large = isLarge(g.body.raw.length);
  if (large) await breather();
  checkNesting(g.body.json);
  const req = { ...g.ingress.decodeRequest(g.body.json, g.model), stream: g.stream };
  ctx.trace.compaction = req.compaction === true;
  if (large) await breather();
  const client = clientContext(g, req);
  return await answering(
    ctx,
    failover(ctx, r, {
      ...familyBound(ctx, r, req),
      run: async (t, key, last) => {
        if (relays(t)) return await relayAttempt(ctx, g, t, key, last);
        if (t.provider.api !== DEMO_API) return await convert(ctx, g, client, t, key, last, req);
        ctx.trace.routed("local");
        const id = idFor(ctx);
        const now = nowSeconds();
        return g.stream
          ? streamToClient(ctx, g, client, localIr(demoStream(req, id, now)))
          : jsonToClient(ctx, g, client, demoResponse(req, id, now));
      },
    }),
  );
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

/** What the client encoder must know about the request it answers. */
function clientContext(g: Generation, req?: ir.Request): ClientContext {
  return { model: g.model, compaction: req?.compaction, tools: req?.tools, ...g.client };
}

function decodeContext(ctx: RequestContext, req: ir.Request): DecodeContext {
  const customTools = req.tools?.filter((t) => t.kind === "custom").map((t) => t.name);
  return { now: nowSeconds(), id: idFor(ctx), customTools };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const idFor = (ctx: RequestContext) => ctx.requestId.replace(/[^A-Za-z0-9]/g, "").slice(0, 24);

/** A non-generation endpoint of a provider's API, relayed as JSON. */
interface OtherEndpoint {
  path: string;
  /** What it does on a platform; absent: platforms do not serve it. */
  operation?: Operation;
  /** The tokens its answer reports (for metrics and the access log). */
  usage(json: Record<string, unknown>): ir.Usage | undefined;
}

type Relayed = Pick<
  Generation,
  "ingress" | "body" | "stream" | "passthroughPath" | "framing" | "providerState"
>;

/**
 * Same format on both sides: bytes in, bytes out; only the model may be renamed. Fails over
 * among the route's targets of the same API (provider-kept state stays with them too).
 */
export function passthrough(
  ctx: RequestContext,
  g: Relayed,
  r: Resolved,
  /** Another endpoint of the same API (compact, count_tokens); default: generation. */
  other?: OtherEndpoint,
): Promise<Response> {
  const api = g.ingress.api;
  return answering(
    ctx,
    failover(ctx, r, {
      run: (t, key, last) => relayAttempt(ctx, g, t, key, last, other),
      eligible: (t) => t.provider.api === api,
      bound: g.providerState ?? `the request is relayed as is to ${api} providers`,
    }),
  );
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

/** One relayed attempt on one target. */
async function relayAttempt(
  ctx: RequestContext,
  g: Relayed,
  r: Resolved,
  key: PoolKey | undefined,
  last: boolean,
  other?: OtherEndpoint,
): Promise<Response> {
  const path = other?.path ?? g.passthroughPath?.(r.upstreamModel) ??
    g.ingress.path(r.upstreamModel, g.stream);
  const { json, raw } = g.body;
  const renamed = r.upstreamModel !== r.requested && typeof json.model === "string";
  const { formats } = ctx.gw;
  const api = r.provider.api;
  const spec = formats.upstream(api)!;
  const sent = renamed ? { ...json, model: r.upstreamModel } : json;
  const platform = r.provider.platform === undefined
    ? undefined
    : throughPlatform(ctx, r, sent, g.stream, other ? other.operation ?? path : "generate", path);
  ctx.trace.routed("relay");
  ctx.trace.attempt();
  const up = await callUpstream({
    provider: r.provider,
    spec,
    key: key?.value,
    path,
    body: renamed ? JSON.stringify(sent) : raw,
    forward: pickHeaders(ctx.req.headers, formats.forwardHeaders(api)),
    signal: ctx.req.signal,
    stopping: ctx.gw.stopping,
    platform,
  });
  const allow = formats.responseHeaders(api, ctx.identity?.limits !== undefined);
  const picked = upstreamHeaders(up.res, allow, ctx.gw.secrets);
  const { idle_ms } = r.provider.timeouts;
  if (!up.res.ok) return await relayError(ctx, up, headersFrom(picked), idle_ms, spec);
  if (!g.stream) {
    // A whole JSON document either way: a fixed body takes Deno's faster response path.
    const { bytes, json } = await readUpstreamJson(up, r.provider, ctx.gw.secrets);
    ctx.trace.reportUsage(other ? other.usage(json) : usageOf(g.ingress, json));
    return respond(bytes, up.res.status, picked);
  }
  const interruption = (why: string) => ctx.dialect.interruption(why);
  const framing = platformFraming(
    platform,
    g.framing?.relayed() ?? upstreamFraming(spec, interruption),
  );
  checkContentType(up, framing.mediaType);
  const reader = new EventReader(up, r.provider.timeouts, framing, ctx.gw.secrets);
  const events = last ? reader : await heldRelay(
    reader,
    g.ingress.decodeStream({
      now: 0,
      id: idFor(ctx),
    }),
  );
  const body = relayStream(events, framing, g.ingress.watch(), ctx.trace);
  const res = respond(body, up.res.status, picked);
  // The provider's own content type stands (a stream need not be SSE).
  for (const [k, v] of Object.entries(STREAM_HEADERS)) {
    if (!res.headers.has(k)) res.headers.set(k, v);
  }
  if (framing.relayedType) res.headers.set("content-type", framing.relayedType);
  res.headers.set("x-accel-buffering", "no");
  return res;
}

/**
 * A relayed stream with its opening held back; its events are decoded to IR (only while held)
 * to tell an opening from content or an error.
 */
function heldRelay(reader: EventReader, decoder: StreamStep<SseEvent, ir.StreamEvent>) {
  return holdOpening(reader, async (batch) => {
    const out: ir.StreamEvent[] = [];
    const emit = { enqueue: (e: ir.StreamEvent) => out.push(e) };
    for (const e of batch.events) {
      try {
        await decoder.transform(e, emit);
      } catch {
        // Relayed as is: what the decoder cannot read counts as content, the client's to judge.
        out.push({ type: "text_delta", index: 0, text: "" });
      }
    }
    return out;
  });
}

/**
 * The call to `r`'s provider through its platform. `operation` is a path when the endpoint is
 * none a platform serves: a target on one cannot take it (nothing is sent).
 */
function throughPlatform(
  ctx: RequestContext,
  r: Resolved,
  json: Record<string, unknown>,
  stream: boolean,
  operation: Operation | string,
  /** The call's path on the vendor's own API. */
  path: string,
): PlatformRequest {
  if (operation !== "generate" && operation !== "count_tokens") {
    const { platform } = r.provider;
    throw badRequest(`${operation} is not served through platform ${platform} (${r.label})`);
  }
  const binding = ctx.gw.formats.platforms.bind(r.provider, ctx.gw.secrets);
  return { binding, call: { model: r.upstreamModel, operation, stream, path }, json };
}

/**
 * A provider's error on a relayed route: a JSON error body is relayed as the provider wrote it
 * (scrubbed of keys); anything else (an nginx HTML page, plain text) becomes the client's own
 * error envelope with the same status and a short excerpt. Thrown, so failover may try the
 * next target; the last one reaches the client.
 */
async function relayError(
  ctx: RequestContext,
  up: UpstreamResponse,
  headers: Headers,
  idleMs: number,
  spec: UpstreamSpec,
): Promise<never> {
  const text = await readErrorText(up, idleMs, ctx.gw.secrets);
  const err = readProviderError(up, text, headers, spec);
  // A platform's error envelope is not the format's: the client hears it in its own dialect.
  const answer = isJsonObject(text) && !up.platform
    ? new Response(text, { status: up.res.status, headers })
    : errorResponse(ctx.dialect, err, ctx.requestId);
  throw new ProviderFailure(err, answer);
}

function isJsonObject(text: string): boolean {
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/** Token usage of a relayed JSON response, for the access log (undefined if unreadable). */
function usageOf(codec: Codec, json: Record<string, unknown>): ir.Usage | undefined {
  try {
    return codec.usage(json);
  } catch {
    return undefined; // an unexpected shape is relayed as is; only the log lacks usage
  }
}

/** Calls a provider of another format with the IR request; throws its errors re-wrapped. */
async function callConverted(
  ctx: RequestContext,
  r: Resolved,
  key: PoolKey | undefined,
  req: ir.Request,
  /** A large request: other requests run between encoding it and serializing it. */
  large = false,
): Promise<UpstreamResponse & { dropped: string[]; target: Codec; framing: UpstreamFraming }> {
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
  const platform = r.provider.platform === undefined
    ? undefined
    : throughPlatform(ctx, r, body, req.stream, "generate", path);
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
  const framing = platformFraming(platform, upstreamFraming(spec));
  checkContentType(up, req.stream ? framing.mediaType : JSON_TYPE);
  return { ...up, dropped, target, framing };
}

/** Names the sampling hints the target lacked, so the drop is never silent. */
function reportDropped(res: Response, dropped: string[]): Response {
  if (dropped.length) res.headers.set("x-gateway-dropped-params", [...new Set(dropped)].join(","));
  return res;
}

/** One converted attempt on one target (a stream is returned once its content starts). */
async function convert(
  ctx: RequestContext,
  g: Generation,
  client: ClientContext,
  r: Resolved,
  key: PoolKey | undefined,
  last: boolean,
  req: ir.Request,
): Promise<Response> {
  const up = await callConverted(ctx, r, key, req, isLarge(g.body.raw.length));
  const dctx = decodeContext(ctx, req);
  if (!g.stream) {
    const { json } = await readUpstreamJson(up, r.provider, ctx.gw.secrets);
    return reportDropped(
      jsonToClient(ctx, g, client, up.target.decodeResponse(json, dctx)),
      up.dropped,
    );
  }
  const events = upstreamIr(upstreamReader(ctx, r, up), up.target.decodeStream(dctx));
  return reportDropped(streamToClient(ctx, g, client, await held(events, last)), up.dropped);
}

/** A converted stream's opening held back, unless no other attempt could follow. */
const held = (source: IrSource, last: boolean) =>
  last ? Promise.resolve(source) : holdOpening(source, (batch) => Promise.resolve(batch));

/**
 * Upstream IR events for a converted streaming request (used by the Responses WebSocket),
 * failing over like an HTTP request until the stream's content starts.
 */
export async function upstreamEvents(
  ctx: RequestContext,
  r: Resolved,
  req: ir.Request,
): Promise<IrSource> {
  return await failover(ctx, r, {
    ...familyBound(ctx, r, req),
    run: async (t, key, last) => {
      if (t.provider.api === DEMO_API) {
        ctx.trace.routed("local");
        return localIr(demoStream(req, idFor(ctx), nowSeconds()));
      }
      const up = await callConverted(ctx, t, key, req);
      const dctx = decodeContext(ctx, req);
      return await held(upstreamIr(upstreamReader(ctx, t, up), up.target.decodeStream(dctx)), last);
    },
  });
}

/** A converted route's upstream events, whole and scrubbed, under its timeouts. */
function upstreamReader(
  ctx: RequestContext,
  r: Resolved,
  up: UpstreamResponse & { framing: UpstreamFraming },
): EventReader {
  return new EventReader(up, r.provider.timeouts, up.framing, ctx.gw.secrets);
}

/** How a format's streams divide into events: its own framing, else server-sent events. */
function upstreamFraming(spec: UpstreamSpec, interruption?: (why: string) => string) {
  return spec.framing?.(interruption) ?? sseFraming(interruption);
}

function jsonToClient(
  ctx: RequestContext,
  g: Generation,
  client: ClientContext,
  res: ir.Response,
): Response {
  ctx.trace.reportUsage(res.usage);
  return Response.json(g.ingress.encodeResponse(res, client));
}

function streamToClient(
  ctx: RequestContext,
  g: Generation,
  client: ClientContext,
  events: IrSource,
): Response {
  const serialize = g.framing?.serializer() ?? formatSse;
  const end = g.framing?.end ?? sseEnd(ctx.dialect);
  const body = clientStream(events, g.ingress.encodeStream(client), serialize, end, ctx.trace);
  const framing = g.framing && { "content-type": g.framing.contentType };
  return respond(body, 200, Object.entries({ ...STREAM_HEADERS, ...framing }));
}

/** Answers without a provider call (e.g. a Responses warm-up with `generate: false`). */
export function answerLocally(ctx: RequestContext, g: Generation, res: ir.Response): Response {
  const client = clientContext(g);
  return g.stream
    ? streamToClient(ctx, g, client, localIr(localEvents(res)))
    : jsonToClient(ctx, g, client, res);
}

/** A local response with no output parts as stream events. */
export function localEvents(res: ir.Response): ir.StreamEvent[] {
  return [
    { type: "start", id: res.id, model: res.model, created: res.created },
    { type: "finish", reason: res.finish, usage: res.usage },
  ];
}

export function localId(ctx: RequestContext): { id: string; now: number } {
  return { id: idFor(ctx), now: nowSeconds() };
}
