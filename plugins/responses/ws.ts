/**
 * GET /v1/responses upgraded to a WebSocket (Codex's transport): one `response.create` JSON
 * frame in, the Responses stream events out, one JSON event per text frame. The core runs the
 * socket (src/request/socket_session.ts: per-frame auth and limits, bounds, backlog, the provider
 * socket); this is what its frames mean.
 *
 * - Passthrough routes get one upstream WebSocket per client socket, because with
 *   `store: false` the provider knows a `previous_response_id` only on that socket.
 * - Other routes, and passthrough routes to a platform provider (Azure has no socket to relay
 *   to), convert each frame through the IR into one HTTP call; the socket keeps its own last
 *   response so `previous_response_id` (Codex chains its turn onto its warm-up) expands to full
 *   input.
 */
import { GatewayError } from "../../src/kit/errors.ts";
import type { HandlerContext, PluginHandler, Route } from "../../src/kit/handler.ts";
import type { ResponseEnd, SocketReply, SocketWire } from "../../src/kit/socket.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { jsonErrorPosition, modelOf } from "../../src/kit/http.ts";
import { checkNesting } from "../../src/kit/nesting.ts";
import { openAiDialect } from "../openai.ts";
import { responsesCodec } from "./codec.ts";
import { checkStatefulFields, isPassthroughRoute, warmupResponse } from "./endpoints.ts";
import { responseSettings } from "./echo.ts";
import { parseRequest, type ResponsesRequest } from "./schema.ts";
import { inputItems, newResponseId, storedChain } from "./state.ts";

const TERMINAL = ["response.completed", "response.incomplete", "response.failed"];
/** How an ending frame's type reads in its text: searched for in every relayed provider frame. */
const ENDING_TYPES = [...TERMINAL, "error"].map((t) => `"type":"${t}"`);

export const responsesWebSocket: PluginHandler = (ctx) =>
  Promise.resolve(ctx.socket(new ResponsesSocket()));

interface LastResponse {
  id: string;
  input: unknown[];
  output: unknown[];
}

/**
 * A `response.create` frame: its request body (the frame without its `type`) as validated —
 * typed, so it is parsed once — and its text.
 */
type Frame = { json: ResponsesRequest; text: string };

/** One client socket's Responses wire, with the socket's own last response for chaining. */
class ResponsesSocket implements SocketWire<Frame, HandlerContext> {
  private last?: LastResponse;

  readonly pacing = "send the next response.create once the previous response has ended";

  readonly upstream = {
    api: responsesCodec.api,
    path: "/responses",
    bound: "a passthrough WebSocket relays to Responses providers on their own API",
    ends: providerFrameEnd,
  };

  /** An error frame as the Responses WebSocket sends it (Codex maps `status`). */
  errorFrame(err: GatewayError): string {
    const { error } = openAiDialect.errorBody(err) as { error: unknown };
    return JSON.stringify({ type: "error", status: err.status, error });
  }

  read(data: unknown): Frame | undefined {
    if (typeof data !== "string") {
      throw new GatewayError(400, "invalid_request", "send JSON text frames, not binary");
    }
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(data);
    } catch (e) {
      throw new GatewayError(
        400,
        "invalid_request",
        `frame is not valid JSON${jsonErrorPosition(e)}`,
      );
    }
    if (frame?.type === "response.processed") return; // an acknowledgement; nothing to do
    if (frame?.type !== "response.create") {
      throw new GatewayError(
        400,
        "invalid_request",
        `unsupported frame type ${JSON.stringify(frame?.type)}; expected "response.create"`,
        "type",
      );
    }
    const { type: _, ...body } = frame;
    return { json: parseRequest(body), text: data };
  }

  async run(ctx: HandlerContext, socket: SocketReply, { json, text }: Frame): Promise<void> {
    const r = ctx.route(modelOf(json));
    // A platform provider (Azure) is reached over HTTP only: its frames convert, one call each.
    if (isPassthroughRoute(r) && r.provider.platform === undefined) {
      // A target that renames the model gets the frame with its own name in it.
      const renamed = (model: string) =>
        JSON.stringify({ ...json, type: "response.create", model });
      await socket.relay(r, (model) => model === r.requested ? text : renamed(model));
      return;
    }
    checkStatefulFields(json);
    await this.convert(ctx, socket, r, json);
  }

  /**
   * Runs one response through the IR. `previous_response_id` chains on the socket's own last
   * response (Codex chains its turn onto its `store: false` warm-up; kept in the socket's
   * memory only, so also where the gateway keeps no response), else on a stored one.
   */
  private async convert(
    ctx: HandlerContext,
    socket: SocketReply,
    r: Route,
    json: ResponsesRequest,
  ) {
    const id = newResponseId();
    let input: unknown[] = inputItems(json.input, id);
    const previous = json.previous_response_id as string | undefined;
    if (previous != null) {
      let chain: unknown[];
      try {
        if (this.last?.id === previous) {
          chain = [...this.last.input, ...this.last.output];
          // Taken: a continuation that fails leaves nothing to chain on (OpenAI evicts it too).
          this.last = undefined;
        } else chain = await storedChain(ctx, r, previous);
      } catch (e) {
        const err = e instanceof GatewayError ? e : new GatewayError(500, "upstream", String(e));
        return socket.refuse(err);
      }
      input = [...chain, ...input];
    }
    const store = ctx.conversations.keeps(r) && json.store !== false;
    const keep = ctx.conversations.keeper(input, store);
    const { previous_response_id: _, ...rest } = json;
    checkNesting(rest);
    const req = responsesCodec.decodeRequest({ ...rest, input, stream: true }, r.requested);
    const events = json.generate === false
      ? ctx.localEvents(warmupResponse(ctx, r.requested))
      : await ctx.events(req, r);
    let done: { id: string; output: unknown[] } | undefined;
    // The terminal frame is kept for chaining.
    const sent = (e: SseEvent) => {
      if (e.event && TERMINAL.includes(e.event)) done = JSON.parse(e.data).response;
    };
    const encoder = responsesCodec.encodeStream({
      model: r.requested,
      compaction: req.compaction,
      tools: req.tools,
      echo: responseSettings(json, store),
      ...(store && { id }),
      onAnswer: keep.onAnswer,
    });
    if (await socket.stream(events, encoder, sent) && done) {
      this.last = { id: done.id, input, output: done.output };
    }
  }
}

/** Of a provider's frame: the end of the response in flight, with its status or usage. */
function providerFrameEnd(text: string): ResponseEnd | undefined {
  if (!ENDING_TYPES.some((t) => text.includes(t))) return undefined;
  try {
    const event = JSON.parse(text);
    if (event.type === "error") return { status: event.status ?? 500 };
    return { usage: { json: [event] } };
  } catch {
    return {}; // an unreadable terminal event is relayed as is; only the log lacks its details
  }
}
