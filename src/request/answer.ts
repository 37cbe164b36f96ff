/**
 * The client's answer from IR: a JSON response or a stream in the client's format and framing,
 * whether the IR came from a provider or was made here.
 */
import type { ClientContext } from "../kit/codec.ts";
import type { IrSource } from "../kit/codec.ts";
import type { GenerationSpec } from "../kit/generation.ts";
import type * as ir from "../kit/ir.ts";
import { responseEvents } from "../kit/ir.ts";
import type { RequestContext } from "./context.ts";
import { clientStream, localIr } from "./client_stream.ts";
import { respond } from "./headers.ts";
import { STREAM_HEADERS } from "../kit/http.ts";
import { sseFraming } from "./stream_stage.ts";

/**
 * The client's answer to `req` (none: a response made here): a whole response as JSON, IR
 * events as a stream. The sampling hints the target lacked are named, so a drop is never silent.
 */
export function answer(
  ctx: RequestContext,
  spec: GenerationSpec,
  from: ir.Response | IrSource,
  req?: ir.Request,
): Response {
  // What the client encoder must know about the request it answers.
  const client = {
    model: spec.model,
    compaction: req?.compaction,
    tools: req?.tools,
    ...spec.client,
  };
  let res: Response;
  if ("next" in from) res = streamToClient(ctx, spec, client, from);
  else {
    ctx.trace.reportUsage(from.usage);
    res = Response.json(spec.ingress.encodeResponse(from, client));
  }
  const { dropped } = ctx.trace;
  if (dropped) res.headers.set("x-gateway-dropped-params", dropped.join(","));
  return res;
}

function streamToClient(
  ctx: RequestContext,
  spec: GenerationSpec,
  client: ClientContext,
  events: IrSource,
): Response {
  const framing = spec.framing?.open() ?? sseFraming((why) => ctx.dialect.interruption(why));
  const body = clientStream(events, spec.ingress.encodeStream(client), framing, ctx.trace);
  const type = spec.framing && { "content-type": spec.framing.contentType };
  return respond(body, 200, Object.entries({ ...STREAM_HEADERS, ...type }));
}

/** Answers without a provider call (e.g. a Responses warm-up with `generate: false`). */
export function answerLocally(
  ctx: RequestContext,
  spec: GenerationSpec,
  res: ir.Response,
): Response {
  const from = spec.stream ? localSource(res) : res;
  return answer(ctx, spec, from);
}

/** A response made here as a stream's events. */
export function localSource(res: ir.Response): IrSource {
  return localIr(responseEvents(res));
}

/** An id and a creation time for a response made here (ids derive from the request id). */
export function localId(ctx: RequestContext): { id: string; now: number } {
  return { id: idFor(ctx), now: nowSeconds() };
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);
export const idFor = (ctx: RequestContext) =>
  ctx.requestId.replace(/[^A-Za-z0-9]/g, "").slice(0, 24);
