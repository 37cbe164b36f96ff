/**
 * GET /v1/responses upgraded to a WebSocket (Codex's transport): one `response.create` JSON
 * frame in, the Responses stream events out, one JSON event per text frame.
 *
 * - Passthrough routes get one upstream WebSocket per client socket, because with
 *   `store: false` the provider knows a `previous_response_id` only on that socket.
 * - Other routes, and passthrough routes to a platform provider (Azure has no socket to relay
 *   to), convert each frame through the IR into one HTTP call; the socket keeps its own last
 *   response so `previous_response_id` (Codex chains its turn onto its warm-up) expands to full
 *   input.
 */
import { authenticate } from "../../src/auth.ts";
import type { Gateway, Handler, RequestContext } from "../../src/context.ts";
import { GatewayError } from "../../src/contract/errors.ts";
import { jsonErrorPosition, modelOf, pickHeaders } from "../../src/http.ts";
import { Deadline } from "../../src/deadline.ts";
import { openUpstreamSocket } from "../../src/relay.ts";
import { clientClosed, ClientGone } from "../../src/stream_end.ts";
import { failureMessage, IrWatch } from "../../src/client_stream.ts";
import { checkNesting } from "../../src/nesting.ts";
import { NOT_READING, SendBacklog } from "../../src/ws_backlog.ts";
import type { SseEvent } from "../../src/contract/sse.ts";
import { type Resolved, retarget } from "../../src/router.ts";
import { failover } from "../../src/failover.ts";
import type { Trace } from "../../src/trace.ts";
import { openAiDialect } from "../openai.ts";
import { responsesCodec } from "./codec.ts";
import { checkStatefulFields, isPassthroughRoute, warmupResponse } from "./endpoints.ts";
import { responseSettings } from "./echo.ts";
import { parseRequest, validateRequest } from "./schema.ts";
import { inputItems, newResponseId, storedChain } from "./state.ts";

const TERMINAL = ["response.completed", "response.incomplete", "response.failed"];

export const responsesWebSocket: Handler = (ctx) => {
  // The upgrade consumes the request, headers included: copy what frames need first.
  const headers = new Headers(ctx.req.headers);
  // Deno pings after 30 s of silence and drops peers that stop answering.
  const { socket, response } = Deno.upgradeWebSocket(ctx.req, { idleTimeout: 60 });
  // The socket's own trace ends when it closes (`gateway_active_websockets`, the access log).
  ctx.trace.upgrade = true;
  ctx.trace.streaming = true;
  new ResponsesSocket(ctx, headers, socket);
  return Promise.resolve(response);
};

interface LastResponse {
  id: string;
  input: unknown[];
  output: unknown[];
}

/** An error frame as the Responses WebSocket sends it (Codex maps `status`). */
function errorFrame(err: GatewayError, code?: string): string {
  const { error } = openAiDialect.errorBody(err) as { error: Record<string, unknown> };
  return JSON.stringify({
    type: "error",
    status: err.status,
    error: { ...error, ...(code && { code }) },
  });
}

/** WebSocket close codes: the server is going away; a message was too big; key revoked. */
const GOING_AWAY = 1001;
const TOO_BIG = 1009;
const POLICY_VIOLATION = 1008;

/**
 * Frames a socket may hold received and not yet answered (the one running included), and their
 * size: responses run one at a time, so a client that sends faster than they end would
 * otherwise queue without limit. Codex waits for each response; past either bound the socket
 * closes with 1008.
 */
const MAX_WAITING_FRAMES = 8;
const MAX_WAITING_BYTES = 32 * 1024 * 1024;

class ResponsesSocket {
  private queue: Promise<void> = Promise.resolve();
  private readonly closed = new AbortController();
  /** Upgrade requests' own signals end with the handshake; frames use the socket's. */
  private readonly req: Request;
  private last?: LastResponse;
  private upstream?: UpstreamSocket;
  private idle?: ReturnType<typeof setTimeout>;
  /** Frames received and not yet answered. */
  private inFlight = 0;
  /** Their size in UTF-16 units (their memory, near enough). */
  private waitingBytes = 0;
  /** What the client has left unread: bounded (see ws_backlog.ts). */
  private readonly backlog: SendBacklog;
  /** Responses so far on this socket (numbers their local ids). */
  private responses = 0;
  /** The snapshot a passthrough socket's frames keep using once its upstream socket is open. */
  private bound?: Gateway;
  /** Set when the socket must close once the error being sent has gone out. */
  private closeAfter?: string;

  constructor(
    private readonly ctx: RequestContext,
    headers: Headers,
    private readonly socket: WebSocket,
  ) {
    this.req = new Request(ctx.req.url, { headers, signal: this.closed.signal });
    this.backlog = new SendBacklog(socket, (why) => this.giveUp(why));
    socket.onmessage = (e) => this.onFrame(e.data);
    socket.onopen = () => ctx.trace.firstByte();
    socket.onclose = () => this.shutdown();
    socket.onerror = () => this.shutdown();
    ctx.gw.closingSockets.signal.addEventListener("abort", this.onStop);
    this.resetIdle();
  }

  private readonly onStop = () => {
    const why = "the gateway is shutting down";
    if (this.upstream) return this.upstream.interrupt(why, GOING_AWAY);
    if (this.inFlight > 0) this.sendError(interrupted(why));
    this.closed.abort(); // a converted response in flight stops: its upstream call is aborted
    this.close(GOING_AWAY, why);
  };

  private resetIdle() {
    clearTimeout(this.idle);
    const { idle_timeout_s } = this.ctx.gw.config.websocket;
    this.idle = setTimeout(() => this.close(1000, "idle"), idle_timeout_s * 1000);
  }

  private shutdown() {
    clearTimeout(this.idle);
    this.backlog.stop();
    this.ctx.gw.closingSockets.signal.removeEventListener("abort", this.onStop);
    this.closed.abort();
    this.upstream?.close();
    this.ctx.trace.end();
  }

  send(text: string) {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.send(text);
    this.backlog.sent();
  }

  /** The client stopped reading: whatever is in flight stops, upstream socket included. */
  private giveUp(why: string) {
    if (this.upstream) this.upstream.interrupt(why, POLICY_VIOLATION);
    else this.close(POLICY_VIOLATION, why);
    this.closed.abort();
    this.upstream?.close();
  }

  /** Relays a provider's frame; one that holds a provider key is scrubbed first. */
  relayFrame(text: string) {
    const { secrets } = this.ctx.gw;
    this.send(secrets.found(text) ? secrets.scrub(text) : text);
  }

  /** A response was cut short: the client gets the interruption frame. */
  interrupted(trace: Trace, why: string) {
    trace.interruptedBy(why);
    this.sendError(interrupted(why));
  }

  sendError(err: GatewayError, code?: string) {
    this.send(this.ctx.gw.secrets.scrub(errorFrame(err, code)));
  }

  close(code = 1000, reason?: string) {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.close(code, reason);
  }

  private onFrame(data: unknown) {
    // Frames that arrive after the socket was closed (while its close completes) are dropped.
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.resetIdle();
    const max = this.ctx.gw.config.websocket.max_message_bytes;
    if (tooBig(data, max)) {
      const why = `message exceeds websocket.max_message_bytes (${max} bytes)`;
      this.sendError(new GatewayError(413, "request_too_large", why));
      return this.close(TOO_BIG, "message too big");
    }
    const size = frameSize(data);
    if (this.inFlight >= MAX_WAITING_FRAMES || this.waitingBytes + size > MAX_WAITING_BYTES) {
      const why = `more than ${MAX_WAITING_FRAMES} messages or ${MAX_WAITING_BYTES} bytes ` +
        "waiting: send the next response.create once the previous response has ended";
      this.sendError(new GatewayError(400, "invalid_request", why));
      return this.close(POLICY_VIOLATION, "too many messages waiting");
    }
    // Responses run one at a time, in order.
    this.inFlight++;
    this.waitingBytes += size;
    this.queue = this.queue.then(() => this.handle(data)).catch((e) => {
      const err = e instanceof GatewayError ? e : new GatewayError(500, "upstream", String(e));
      this.sendError(err);
      if (this.closeAfter) this.close(POLICY_VIOLATION, this.closeAfter);
    }).finally(() => {
      this.inFlight--;
      this.waitingBytes -= size;
    });
  }

  private async handle(data: unknown): Promise<void> {
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
    const json = validateRequest(body);
    // Each response on the socket has its own trace (and access-log line).
    const trace = this.ctx.trace.forResponse();
    // Each frame is a new request under the config in force now, except on a socket bound to
    // its provider's socket, which keeps the config it opened that socket with.
    const gw = this.bound ?? this.ctx.gw.live.current;
    // Local response ids derive from the request id: number them so that two responses on one
    // socket never share an id (chaining names one). The access log keeps the upgrade's.
    const requestId = `${++this.responses}${this.ctx.requestId}`;
    const ctx = this.ctx.next({ gw, req: this.req, trace, requestId });
    let relayed = false;
    try {
      // The key is checked again against the keys in force: a revoked one ends the socket.
      try {
        if (!trace.consumer) {
          const { keys } = this.ctx.gw.live.current;
          trace.key = authenticate(keys, [openAiDialect], this.req, this.ctx.url);
        }
      } catch (e) {
        this.closeAfter = "API key revoked";
        throw e;
      }
      // Each response is a request of its own for the identity's limits (refused: an error
      // frame, and the socket stays open).
      const live = this.ctx.gw.live.current;
      if (trace.consumer && !live.config.identities.kong_consumers) {
        this.closeAfter = "Kong consumers are no longer accepted";
        throw new GatewayError(
          401,
          "authentication",
          "Kong consumer identities are no longer accepted by this gateway; reconnect with an API key",
        );
      }
      // Under the config in force: a reload may have changed the identity's limits.
      const identity = trace.consumer
        ? live.policy.consumerAgain(this.ctx.identity!)
        : live.policy.key(trace.key!);
      await gw.limiter.admit(trace, identity, openAiDialect);
      const r = ctx.route(modelOf(json));
      // A platform provider (Azure) is reached over HTTP only: its frames convert, one call each.
      if (isPassthroughRoute(r) && r.provider.platform === undefined) {
        relayed = await this.relay(ctx, r, json, data);
        this.bound ??= gw;
        return;
      }
      checkStatefulFields(json);
      await this.convert(ctx, r, json);
    } catch (e) {
      const err = e instanceof GatewayError
        ? e
        : e instanceof ClientGone
        ? clientClosed()
        : new GatewayError(500, "upstream", String(e));
      if (e instanceof ClientGone) trace.clientGone = true;
      trace.status = err.status;
      trace.failed(err.kind, err.message);
      throw err;
    } finally {
      // A relayed response ends when the upstream socket says so.
      if (!relayed) trace.end(trace.status ?? 200);
      // The socket's next frame is admitted only once this response's usage is counted.
      await trace.counted;
    }
  }

  /**
   * Sends the frame to the provider's socket; false if the client left meanwhile. The socket
   * is opened on the first frame, failing over among the route's Responses targets; later
   * frames stay on it (its provider keeps their `previous_response_id` state).
   */
  private async relay(
    ctx: RequestContext,
    r: Resolved,
    json: Record<string, unknown>,
    text: string,
  ): Promise<boolean> {
    const trace = ctx.trace;
    trace.routed("relay");
    if (!this.upstream) {
      const { formats } = ctx.gw;
      let chosen = r;
      const upstream = await failover(ctx, r, {
        // A platform addresses HTTP calls only.
        eligible: (t) => t.provider.api === responsesCodec.api && t.provider.platform === undefined,
        bound: "a passthrough WebSocket relays to Responses providers on their own API",
        run: async (t, key) => {
          trace.attempt();
          chosen = t;
          const ws = await openUpstreamSocket({
            provider: t.provider,
            spec: formats.upstream(t.provider.api)!,
            key: key?.value,
            path: "/responses",
            forward: pickHeaders(this.req.headers, formats.forwardHeaders(t.provider.api)),
            signal: this.closed.signal,
            stopping: ctx.gw.stopping,
          });
          return new UpstreamSocket(t.provider.name, ws, t.provider.timeouts, this);
        },
      });
      r = chosen;
      // The client may have left while the provider's socket was opening.
      if (this.closed.signal.aborted) {
        upstream.close();
        return false;
      }
      this.upstream = upstream;
    } else {
      const target = r.targets.find((t) => t.provider.name === this.upstream!.provider);
      if (!target) {
        throw new GatewayError(
          400,
          "invalid_request",
          `this WebSocket relays to provider ${this.upstream.provider}; model ${json.model} routes elsewhere`,
          "model",
        );
      }
      trace.attempt();
      r = retarget(r, target, r.requested);
      trace.target(r.requested, r);
    }
    this.upstream.send(
      r.upstreamModel !== r.requested
        ? JSON.stringify({ ...json, type: "response.create", model: r.upstreamModel })
        : text,
      trace,
    );
    return true;
  }

  /**
   * Runs one response through the IR. `previous_response_id` chains on the socket's own last
   * response (Codex chains its turn onto its `store: false` warm-up; kept in the socket's
   * memory only, so also where the gateway keeps no response), else on a stored one.
   */
  private async convert(ctx: RequestContext, r: Resolved, json: Record<string, unknown>) {
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
        ctx.trace.status = e instanceof GatewayError ? e.status : 500;
        const code = e instanceof GatewayError ? e.code : undefined;
        return this.sendError(e as GatewayError, code);
      }
      input = [...chain, ...input];
    }
    const store = ctx.conversations.keeps(r) && json.store !== false;
    const keep = ctx.conversations.keeper(input, store);
    const { previous_response_id: _, ...rest } = json;
    checkNesting(rest);
    const req = responsesCodec.decodeRequest({ ...rest, input, stream: true }, ctx.trace.model!);
    ctx.trace.compaction = req.compaction === true;
    if (json.generate === false) ctx.trace.routed("local");
    const events = json.generate === false
      ? ctx.localEvents(warmupResponse(ctx, ctx.trace.model!))
      : await ctx.events(req, r);
    const watch = new IrWatch(ctx.trace);
    let done: { id: string; output: unknown[] } | undefined;
    // Each frame goes out as the encoder makes it; the terminal one is kept for chaining.
    const frames = {
      enqueue: (e: SseEvent) => {
        ctx.trace.firstByte();
        this.send(e.data);
        if (e.event && TERMINAL.includes(e.event)) done = JSON.parse(e.data).response;
      },
    };
    const encoder = responsesCodec.encodeStream({
      model: ctx.trace.model!,
      compaction: req.compaction,
      tools: req.tools,
      echo: responseSettings(parseRequest(json), store),
      ...(store && { id }),
      onAnswer: keep.onAnswer,
    });
    try {
      for (let batch = await events.next(); batch; batch = await events.next()) {
        for (const e of batch) {
          watch.see(e);
          await encoder.transform(e, frames);
        }
        // The provider's stream is not read while the client leaves frames unread.
        if (!await this.backlog.drained()) {
          const gone = new ClientGone(NOT_READING);
          await events.cancel(gone); // its deadline and connection go with it
          throw gone;
        }
      }
    } catch (e) {
      if (this.closed.signal.aborted) return;
      return this.interrupted(ctx.trace, failureMessage(e));
    }
    if (!watch.ended) {
      return this.interrupted(ctx.trace, "the upstream closed the stream before its end");
    }
    if (done) this.last = { id: done.id, input, output: done.output };
  }
}

/** A received frame's size: UTF-16 units of text, bytes of binary. */
function frameSize(data: unknown): number {
  if (typeof data === "string") return data.length;
  if (data instanceof ArrayBuffer) return data.byteLength;
  return data instanceof Blob ? data.size : 0;
}

/** Whether a frame is over `max` bytes (a text frame counts its UTF-8 length). */
function tooBig(data: unknown, max: number): boolean {
  if (typeof data === "string") {
    // UTF-8 takes 1 to 3 bytes per UTF-16 unit: encode only when the bounds cannot tell.
    if (data.length > max) return true;
    return data.length * 3 > max && new TextEncoder().encode(data).byteLength > max;
  }
  if (data instanceof ArrayBuffer) return data.byteLength > max;
  return data instanceof Blob && data.size > max;
}

function interrupted(message: string): GatewayError {
  return new GatewayError(502, "upstream_interrupted", message);
}

/** The provider-side socket of a passthrough route; frames flow through untouched. */
class UpstreamSocket {
  /** Responses sent and not yet ended, oldest first (a socket runs them in order). */
  private readonly pending: Trace[] = [];

  /** First-byte, then idle deadline of the response in flight (as for an HTTP stream). */
  private readonly deadline = new Deadline((err) => {
    this.interrupt(err.message);
    this.close();
  });

  constructor(
    readonly provider: string,
    private readonly ws: WebSocket,
    private readonly timeouts: { first_byte_ms: number; idle_ms: number },
    private readonly client: ResponsesSocket,
  ) {
    ws.onmessage = (e) => {
      const text = typeof e.data === "string" ? e.data : "";
      const current = this.pending[0];
      current?.firstByte();
      if (TERMINAL.some((t) => text.includes(`"type":"${t}"`)) || text.includes('"type":"error"')) {
        this.end(text);
      }
      this.arm(timeouts.idle_ms, "went idle");
      client.relayFrame(text);
    };
    ws.onclose = () => this.interrupt("the upstream WebSocket closed before the response ended");
  }

  /** Logs the oldest response with what its terminal event says (status, usage). */
  private end(terminal: string) {
    const done = this.pending.shift();
    if (!done) return;
    try {
      const event = JSON.parse(terminal);
      if (event.type === "error") done.status = event.status ?? 500;
      else done.reportUsage(responsesCodec.usage(event.response ?? {}));
    } catch {
      // an unreadable terminal event is relayed as is; only the log lacks its details
    }
    done.end(done.status ?? 200);
  }

  /** (Re)starts the deadline while a response is in flight. */
  private arm(ms: number, what: string) {
    if (this.pending.length === 0) return this.deadline.clear();
    this.deadline.arm(ms, what);
  }

  /** Ends the client socket, telling it first if a response was cut short. */
  interrupt(why: string, code?: number) {
    this.deadline.clear();
    const [current, ...queued] = this.pending.splice(0);
    if (current) this.client.interrupted(current, why);
    for (const t of [current, ...queued]) t?.end(502);
    this.client.close(code, code ? why : undefined);
  }

  send(text: string, trace: Trace) {
    this.pending.push(trace);
    this.arm(this.timeouts.first_byte_ms, "sent no data");
    this.ws.send(text);
  }

  close() {
    this.deadline.clear();
    if (this.ws.readyState <= WebSocket.OPEN) this.ws.close();
  }
}
