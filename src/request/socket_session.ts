/**
 * A client WebSocket whose frames are requests (the Responses WebSocket): the core runs the
 * session and the plugin's wire (src/kit/socket.ts) says what frames mean. Each frame is
 * authenticated again and admitted by the identity's limits under the config in force, runs
 * after the one before it, and gets its own trace (an access-log line). The session bounds
 * message size and frames waiting, closes when idle, pauses converted streams while the client
 * leaves frames unread (ws_backlog.ts), and ends on shutdown with the interruption frame.
 */
import { authenticate } from "./auth.ts";
import type { IrSource, StreamStep } from "../kit/codec.ts";
import { GatewayError } from "../kit/errors.ts";
import type { HandlerContext } from "../kit/handler.ts";
import type * as ir from "../kit/ir.ts";
import type { SocketReply, SocketWire } from "../kit/socket.ts";
import type { SseEvent } from "../kit/sse.ts";
import type { Gateway, RequestContext } from "./context.ts";
import { failureMessage, IrWatch } from "./client_stream.ts";
import { openProviderSocket, type ProviderSocket } from "./provider_socket.ts";
import { type Resolved, resolvedOf } from "./router.ts";
import type { Route } from "../kit/route.ts";
import { clientClosed, ClientGone } from "./stream_end.ts";
import type { Trace } from "../ops/trace.ts";
import { DEFAULT_OUTPUT_TOKENS, tokensFor } from "../ops/estimate.ts";
import { NOT_READING, SendBacklog } from "./ws_backlog.ts";

/** WebSocket close codes: the server is going away; a message was too big; key revoked. */
const GOING_AWAY = 1001;
const TOO_BIG = 1009;
const POLICY_VIOLATION = 1008;

/**
 * Frames a socket may hold received and not yet answered (the one running included), and their
 * size: frames run one at a time, so a client that sends faster than they end would otherwise
 * queue without limit. Codex waits for each response; past either bound the socket closes with
 * 1008.
 */
const MAX_WAITING_FRAMES = 8;
const MAX_WAITING_BYTES = 32 * 1024 * 1024;

/** Upgrades `ctx`'s request and runs its session with `wire`. */
export function openSocketSession<F>(
  ctx: RequestContext,
  wire: SocketWire<F, HandlerContext>,
): Response {
  // The upgrade consumes the request, headers included: copy what frames need first.
  const headers = new Headers(ctx.req.headers);
  // Deno pings after 30 s of silence and drops peers that stop answering.
  const { socket, response } = Deno.upgradeWebSocket(ctx.req, { idleTimeout: 60 });
  // The socket's own trace ends when it closes (`gateway_active_websockets`, the access log).
  ctx.trace.upgrade = true;
  ctx.trace.streaming = true;
  new SocketSession(ctx, wire, headers, socket);
  return response;
}

class SocketSession<F> {
  private queue: Promise<void> = Promise.resolve();
  private readonly closed = new AbortController();
  /** Upgrade requests' own signals end with the handshake; frames use the socket's. */
  private readonly req: Request;
  private upstream?: ProviderSocket;
  private idle?: ReturnType<typeof setTimeout>;
  /** Frames received and not yet answered. */
  private inFlight = 0;
  /** Their size in UTF-16 units (their memory, near enough). */
  private waitingBytes = 0;
  /** What the client has left unread: bounded (see ws_backlog.ts). */
  private readonly backlog: SendBacklog;
  /** Frames run so far on this socket (numbers their request ids). */
  private frames = 0;
  /** The snapshot a relaying socket's frames keep using once its provider socket is open. */
  private bound?: Gateway;
  /** Set when the socket must close once the error being sent has gone out. */
  private closeAfter?: string;

  constructor(
    private readonly ctx: RequestContext,
    private readonly wire: SocketWire<F, HandlerContext>,
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

  private send(text: string) {
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

  private sendError(err: GatewayError) {
    this.send(this.ctx.gw.secrets.scrub(this.wire.errorFrame(err)));
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
        `waiting: ${this.wire.pacing}`;
      this.sendError(new GatewayError(400, "invalid_request", why));
      return this.close(POLICY_VIOLATION, "too many messages waiting");
    }
    // Frames run one at a time, in order.
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
    const frame = this.wire.read(data);
    if (frame === undefined) return;
    // Each frame has its own trace (and access-log line).
    const trace = this.ctx.trace.forResponse();
    // Each frame is a new request under the config in force now, except on a socket bound to
    // its provider's socket, which keeps the config it opened that socket with.
    const gw = this.bound ?? this.ctx.gw.live.current;
    // Local response ids derive from the request id: number them so that two responses on one
    // socket never share an id (chaining names one). The access log keeps the upgrade's.
    const requestId = `${++this.frames}${this.ctx.requestId}`;
    const ctx = this.ctx.next({ gw, req: this.req, trace, requestId });
    const reply = new FrameReply(this, ctx);
    try {
      await this.admit(trace, gw, frameSize(data));
      await this.wire.run(ctx, reply, frame);
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
      // A relayed response ends when the provider socket says so.
      if (!reply.relayed) trace.end(trace.status ?? 200);
      // The socket's next frame is admitted only once this response's usage is counted.
      await trace.counted;
    }
  }

  /**
   * The key is checked again against the keys in force (a revoked one ends the socket), and
   * the frame is a request of its own for the identity's limits, its `size` held for its answer
   * where a token window limits it (refused: an error frame, and the socket stays open).
   */
  private async admit(trace: Trace, gw: Gateway, size: number) {
    const live = this.ctx.gw.live.current;
    try {
      if (!trace.consumer) {
        trace.key = authenticate(live.keys, [this.ctx.dialect], this.req, this.ctx.url);
      }
    } catch (e) {
      this.closeAfter = "API key revoked";
      throw e;
    }
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
    await gw.limiter.admit(trace, identity, this.ctx.dialect);
    // The frame is the request: its size and the default output are held for its answer.
    await gw.limiter.reserve(
      trace,
      () => tokensFor(size) + DEFAULT_OUTPUT_TOKENS,
      this.ctx.dialect,
    );
  }

  /** Converted IR events as frames, read only while the client keeps up. */
  async stream(
    trace: Trace,
    events: IrSource,
    encoder: StreamStep<ir.StreamEvent, SseEvent>,
    sent?: (e: SseEvent) => void,
  ): Promise<boolean> {
    const watch = new IrWatch(trace);
    const frames = {
      enqueue: (e: SseEvent) => {
        trace.firstByte();
        this.send(e.data);
        sent?.(e);
      },
    };
    try {
      for (let batch = await events.next(); batch; batch = await events.next()) {
        for (const e of batch) {
          watch.see(e);
          // Most encoders are synchronous: no await (a turn of the microtask queue) for them.
          const held = encoder.transform(e, frames);
          if (held) await held;
        }
        // The provider's stream is not read while the client leaves frames unread.
        if (!await this.backlog.drained()) {
          const gone = new ClientGone(NOT_READING);
          await events.cancel(gone); // its deadline and connection go with it
          throw gone;
        }
      }
    } catch (e) {
      watch.stopped();
      if (!this.closed.signal.aborted) this.interrupted(trace, failureMessage(e));
      else {
        // The client left: the trace ends as an HTTP stream's does then.
        trace.clientGone = true;
        trace.failed("invalid_request", "client disconnected");
      }
      return false;
    }
    if (!watch.ended) {
      watch.stopped();
      this.interrupted(trace, "the upstream closed the stream before its end");
      return false;
    }
    return true;
  }

  /** Answers a frame with an error frame, the socket staying open. */
  refuse(trace: Trace, err: GatewayError) {
    trace.status = err.status;
    this.sendError(err);
  }

  /**
   * Sends the frame to the provider's socket; false if the client left meanwhile. The socket
   * is opened on the first frame, failing over among the route's targets of the wire's format;
   * later frames stay on it (its provider keeps their state).
   */
  async relay(ctx: RequestContext, r: Resolved, frame: (model: string) => string) {
    const trace = ctx.trace;
    trace.routed("relay");
    if (!this.upstream) {
      const { upstream } = this.wire;
      if (!upstream) throw new Error("a socket wire without `upstream` relays no frame");
      const signal = this.closed.signal;
      const opened = await openProviderSocket(ctx, r, upstream, this, signal);
      this.bound ??= ctx.gw;
      r = opened.target;
      // The client may have left while the provider's socket was opening.
      if (signal.aborted) {
        opened.socket.close();
        return false;
      }
      this.upstream = opened.socket;
    } else {
      const target = r.targets.find((t) => t.provider.name === this.upstream!.provider);
      if (!target) {
        throw new GatewayError(
          400,
          "invalid_request",
          `this WebSocket relays to provider ${this.upstream.provider}; model ${r.requested} routes elsewhere`,
          "model",
        );
      }
      trace.attempt();
      r = r.to(target);
      trace.target(r.requested, r);
    }
    const text = frame(r.upstreamModel);
    trace.sentChars = text.length;
    this.upstream.send(text, trace);
    return true;
  }
}

/** What one frame's run may do on its socket (the contract's `SocketReply`). */
class FrameReply<F> implements SocketReply {
  /** The frame went to the provider socket, which ends its trace. */
  relayed = false;

  constructor(private readonly session: SocketSession<F>, private readonly ctx: RequestContext) {}

  stream(
    events: IrSource,
    encoder: StreamStep<ir.StreamEvent, SseEvent>,
    sent?: (e: SseEvent) => void,
  ): Promise<boolean> {
    return this.session.stream(this.ctx.trace, events, encoder, sent);
  }

  refuse(err: GatewayError): void {
    this.session.refuse(this.ctx.trace, err);
  }

  async relay(route: Route, frame: (model: string) => string): Promise<boolean> {
    this.relayed = await this.session.relay(this.ctx, resolvedOf(route), frame);
    return this.relayed;
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
