/**
 * ConverseStream's byte framing: AWS event-stream frames (application/vnd.amazon.eventstream,
 * CRC-checked by plugins/platforms/event_stream.ts), each one event for the decoder, named by
 * its `:event-type` — or by its `:exception-type` for an exception frame, which the decoder
 * turns into an error. A frame that fails its checksum (or has an impossible length) ends the stream as a malformed
 * event.
 */
import type { SseEvent } from "../../src/kit/sse.ts";
import type { UpstreamFraming } from "../../src/kit/framing.ts";
import { cutFrames, type EventStreamFrame } from "../platforms/event_stream.ts";

export const EVENT_STREAM_TYPE = "application/vnd.amazon.eventstream";

function eventOf(frame: EventStreamFrame, decode: (b: Uint8Array) => string): SseEvent {
  const h = frame.headers;
  if (h[":message-type"] === "error") {
    // The protocol's own error frame: code and message in headers, no payload.
    const data = JSON.stringify({ message: h[":error-message"] ?? "" });
    return { event: h[":error-code"] ?? "InternalServerException", data };
  }
  const name = h[":message-type"] === "exception" ? h[":exception-type"] : h[":event-type"];
  return { event: name ?? "", data: decode(frame.payload) };
}

/** Converse is never relayed to a client, so a cut stream needs no ending of its own here. */
export function converseFraming(): UpstreamFraming {
  return {
    mediaType: EVENT_STREAM_TYPE,
    scan(buf, _from, decode) {
      const { frames, cut, error } = cutFrames(buf);
      const events = frames.map((f) => eventOf(f, decode));
      if (!error) return { cut, events };
      return { cut: buf.length, events, malformed: { at: events.length, before: "" } };
    },
    complete: () => "",
    interrupted: () => "",
  };
}
