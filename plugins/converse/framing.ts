/**
 * ConverseStream's byte framing, both ways: AWS event-stream frames
 * (application/vnd.amazon.eventstream, CRC-checked by plugins/platforms/event_stream.ts), each
 * one event named by its `:event-type` — or by its `:exception-type` for an exception frame,
 * which the decoder turns into an error — and the same events written back as frames for a
 * Converse client. A relayed stream goes out as the provider's own frames. A frame that fails
 * its checksum (or has an impossible length), or whose payload is not whole JSON, ends the
 * stream as a malformed event.
 */
import { formatSse, looksWhole, type SseEvent } from "../../src/kit/sse.ts";
import type { UpstreamFraming } from "../../src/kit/framing.ts";
import type { StreamFraming } from "../../src/kit/generation.ts";
import { joinBytes } from "../../src/kit/http.ts";
import {
  cutFrames,
  EVENT_STREAM_TYPE,
  type EventStreamFrame,
  jsonFrame,
  loadEventStreams,
} from "../platforms/event_stream.ts";

export { EVENT_STREAM_TYPE };

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

/** An event as its frame: an exception's name (`throttlingException`) makes an exception frame. */
export function frameOf(e: SseEvent): Uint8Array {
  const name = e.event ?? "";
  return jsonFrame(name.endsWith("Exception") ? "exception" : "event", name, e.data);
}

/**
 * How a Converse client hears that its stream was cut: the exception AWS sends for a stream
 * that failed once started, which its SDKs raise.
 */
export const cutStream = (why: string) =>
  frameOf({ event: "modelStreamErrorException", data: JSON.stringify({ message: why }) });

/** One stream's framing, read (a provider's) or written (a client's). */
export function converseFraming(): UpstreamFraming {
  return {
    mediaType: EVENT_STREAM_TYPE,
    ready: loadEventStreams(),
    scan(buf, _from, decode) {
      const { frames, cut, error } = cutFrames(buf);
      const events = frames.map((f) => eventOf(f, decode));
      // A frame whose payload is not whole JSON ends the stream as an SSE event would.
      const broken = events.findIndex((e) => !looksWhole(e.data));
      if (broken >= 0) return { cut: buf.length, events, malformed: { at: broken, before: "" } };
      if (error) return { cut: buf.length, events, malformed: { at: events.length, before: "" } };
      // The events as text, where provider keys are looked for (the bytes are binary).
      return { cut, events, text: events.map(formatSse).join("") };
    },
    write: frameOf,
    rewrite: (events) => joinBytes(events.map(frameOf)),
    complete: () => "",
    interrupted: cutStream,
  };
}

/** A Converse client's stream (`/converse-stream`), relayed or converted. */
export const CONVERSE_STREAM: StreamFraming = {
  contentType: EVENT_STREAM_TYPE,
  open: converseFraming,
};
