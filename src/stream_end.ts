/**
 * How a client's stream ends: the ending text in its framing, the close, and the trace's end;
 * or the client leaving first.
 */
import { GatewayError } from "./contract/errors.ts";
import type { Dialect } from "./contract/format.ts";
import type { Trace } from "./trace.ts";

/** The client went away; nothing is left to answer. */
export class ClientGone extends Error {}

/** How a request whose client went away is logged and counted (nobody reads the answer). */
export const clientClosed = () =>
  new GatewayError(499, "invalid_request", "client closed the request");

/** How a client stream ends, in its framing. `sent`: whether any bytes went out before. */
export interface StreamEnd {
  /** Text after a complete stream. */
  complete(sent: boolean): string;
  /** Text that tells the client the upstream stopped before its end marker. */
  interrupted(sent: boolean, why: string): string;
}

/** SSE framing: a cut stream ends with the dialect's own interruption ending. */
export function sseEnd(dialect: Dialect): StreamEnd {
  return {
    complete: () => "",
    interrupted: (_, why) => dialect.interruption(why),
  };
}

const encoder = new TextEncoder();

/** Closes a client stream with its ending text and ends its trace (interrupted if `why`). */
export function closeStream(
  controller: ReadableStreamDefaultController<Uint8Array>,
  trace: Trace,
  ending: string,
  why?: string,
): void {
  if (ending) controller.enqueue(encoder.encode(ending));
  controller.close();
  if (why !== undefined) trace.interruptedBy(why);
  trace.end();
}

/** The client left mid-stream: the trace ends there. */
export function clientGone(
  trace: Trace,
  controller?: ReadableStreamDefaultController<Uint8Array>,
  e?: unknown,
): void {
  trace.clientGone = true;
  trace.failed("invalid_request", "client disconnected");
  trace.end();
  controller?.error(e);
}
