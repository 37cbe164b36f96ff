/**
 * A WebSocket endpoint as a plugin declares it. The core upgrades the request and runs the
 * session: per-frame authentication and limits, message size and queue bounds, the idle close,
 * the send backlog, shutdown, and a relaying session's provider socket (opened with failover,
 * its deadlines). The plugin says what its frames mean and how its errors read.
 */
import type { IrSource, StreamStep } from "./codec.ts";
import type { GatewayError } from "./errors.ts";
import type * as ir from "./ir.ts";
import type { Route } from "./route.ts";
import type { SseEvent } from "./sse.ts";
import type { UsageSource } from "./usage.ts";

/** A socket endpoint's wire; `F` is a frame as the plugin reads it, `C` a frame's context. */
export interface SocketWire<F, C> {
  /** An error as this wire's frame. */
  errorFrame(err: GatewayError): string;
  /**
   * Reads a frame the client sent (text, or binary as Deno delivers it): what to run, or
   * undefined for a frame that asks nothing (an acknowledgement). Throws a GatewayError for a
   * bad one: the client gets its error frame and the socket stays open.
   */
  read(data: unknown): F | undefined;
  /**
   * What a client that has too many frames waiting is told to do instead (frames run one at a
   * time, and only a bounded number may wait).
   */
  pacing: string;
  /** Runs one frame, a request of its own: the core has authenticated and admitted it. */
  run(ctx: C, socket: SocketReply, frame: F): Promise<void>;
  /** How the provider socket of a relaying session reads (a wire that never relays has none). */
  upstream?: ProviderSocketWire;
}

/** A relaying session's provider socket: the targets it may open, and its frames' ends. */
export interface ProviderSocketWire {
  /** The format (plugin id) of the providers a socket may be opened to. */
  api: string;
  /** Appended to the provider's `base_url` (scheme turned to `ws`). */
  path: string;
  /** Why other targets are left out, for the error when the route has none of `api`. */
  bound: string;
  /**
   * Of a provider frame: undefined, or the end of the response in flight with its status (an
   * error's) or where its usage is, for the log. Frames are relayed as they are, either way.
   */
  ends(text: string): ResponseEnd | undefined;
}

/**
 * How a relayed response ended, for its log line: an error's status, or the frame that carries
 * its usage (read by the codec of the wire's `api`).
 */
export interface ResponseEnd {
  status?: number;
  usage?: UsageSource;
}

/** What a frame's run may do on the client's socket. */
export interface SocketReply {
  /**
   * Sends converted IR events as frames (each encoded event's data one text frame), reading the
   * provider's stream only while the client keeps up. `sent` sees each frame. False if the
   * stream was cut short: the client then got the interruption frame.
   */
  stream(
    events: IrSource,
    encoder: StreamStep<ir.StreamEvent, SseEvent>,
    sent?: (e: SseEvent) => void,
  ): Promise<boolean>;
  /** Answers the frame with an error frame; the socket stays open. */
  refuse(err: GatewayError): void;
  /**
   * Sends `frame` (given the model its target calls it) on the session's provider socket, opened
   * on the first relayed frame among `route`'s targets of `upstream.api` (the wire must declare
   * `upstream`); later frames stay on that provider. False if the client left meanwhile. A
   * property, not a method: an implementation must take any `Route` (src/kit/handler.ts).
   */
  relay: (route: Route, frame: (model: string) => string) => Promise<boolean>;
}
