/**
 * How a client's stream ends: the ending text in its framing, the close, and the trace's end;
 * or the client leaving first.
 */
import { ClientGone, GatewayError } from "../kit/errors.ts";
import type { Written } from "../kit/framing.ts";
import type { Trace } from "../ops/trace.ts";

export { ClientGone };

/** How a request whose client went away is logged and counted (nobody reads the answer). */
export const clientClosed = () =>
  new GatewayError(499, "invalid_request", "client closed the request");

const encoder = new TextEncoder();

/** What a framing wrote, as the bytes that go out. */
export const encodeWritten = (w: Written): Uint8Array =>
  typeof w === "string" ? encoder.encode(w) : w;

/**
 * Ends a client stream with its ending text and ends its trace (interrupted if `why`). The close
 * waits for the trace's bookkeeping (a limited identity's usage counted, in Redis too), so a
 * request that starts after the client saw this answer end sees it counted; other streams close
 * at once.
 */
export function closeStream(
  controller: ReadableStreamDefaultController<Uint8Array>,
  trace: Trace,
  ending: Written,
  why?: string,
): void | Promise<void> {
  if (ending.length) controller.enqueue(encodeWritten(ending));
  if (why !== undefined) trace.interruptedBy(why);
  trace.end();
  if (!trace.counted) return controller.close();
  return trace.counted.then(() => closeQuietly(controller));
}

/** The client may have left while the count was written: nothing is left to close then. */
function closeQuietly(controller: ReadableStreamDefaultController<Uint8Array>): void {
  try {
    controller.close();
  } catch {
    // cancelled meanwhile
  }
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
