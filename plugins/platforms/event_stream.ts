/**
 * AWS event-stream framing (application/vnd.amazon.eventstream), as Bedrock streams Converse
 * and InvokeModel answers, read from its providers and written to its clients: frames are cut
 * out of the byte stream by their length prefix (a frame boundary is not a chunk boundary) and
 * decoded by Smithy's codec, which checks both CRC32s, and encoded by the same codec. Only
 * string headers are kept: `:message-type`, `:event-type`, `:exception-type` and
 * `:content-type` are all Bedrock sends.
 */
// @smithy/eventstream-codec now re-exports this (deprecated there); this is its home.
import type { EventStreamCodec } from "@smithy/core/event-streams";

export const EVENT_STREAM_TYPE = "application/vnd.amazon.eventstream";

export interface EventStreamFrame {
  headers: Record<string, string>;
  payload: Uint8Array;
}

let codec: EventStreamCodec | undefined;
let loading: Promise<void> | undefined;

/**
 * Loads the codec, once: a framing that encodes or decodes frames gives this as its `ready`, and
 * the core awaits it before the framing's first scan or write. Loaded on first use, since Smithy's
 * modules hold ~1.5 MB of heap that a gateway without Bedrock clients or providers never uses,
 * and a larger heap costs every request's garbage collection (docs/performance.md).
 */
export function loadEventStreams(): Promise<void> {
  return loading ??= import("@smithy/core/event-streams").then(({ EventStreamCodec }) => {
    codec = new EventStreamCodec(
      (bytes: Uint8Array) => new TextDecoder().decode(bytes),
      (text: string) => new TextEncoder().encode(text),
    );
  });
}

function loaded(): EventStreamCodec {
  if (!codec) throw new Error("the event-stream codec is used before loadEventStreams()");
  return codec;
}

/** Frames whose prelude announces more than this are refused rather than buffered. */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;
const PRELUDE_BYTES = 12;

export class EventStreamError extends Error {
  override name = "EventStreamError";
}

export function encodeFrame(frame: EventStreamFrame): Uint8Array {
  const headers = Object.fromEntries(
    Object.entries(frame.headers).map(([k, value]) => [k, { type: "string" as const, value }]),
  );
  return loaded().encode({ headers, body: frame.payload });
}

const encoder = new TextEncoder();

/**
 * A frame as Bedrock writes them: an `event` named by `:event-type`, or an `exception` named by
 * `:exception-type` (`throttlingException`), with a JSON payload.
 */
export function jsonFrame(kind: "event" | "exception", type: string, json: string): Uint8Array {
  return encodeFrame({
    headers: {
      [`:${kind}-type`]: type,
      ":content-type": "application/json",
      ":message-type": kind,
    },
    payload: encoder.encode(json),
  });
}

function decodeFrame(codec: EventStreamCodec, bytes: Uint8Array): EventStreamFrame {
  let message;
  try {
    message = codec.decode(bytes);
  } catch (error) {
    throw new EventStreamError(`malformed event-stream frame: ${(error as Error).message}`);
  }
  const headers: Record<string, string> = {};
  for (const [name, h] of Object.entries(message.headers)) {
    if (h.type === "string") headers[name] = h.value;
  }
  return { headers, payload: message.body };
}

/** Whole frames cut from the start of a buffer. */
interface FrameCut {
  frames: EventStreamFrame[];
  /** The offset just past the last whole frame (the rest is an incomplete frame). */
  cut: number;
  /** The next frame is corrupt (impossible length, bad checksum): the stream cannot go on. */
  error?: EventStreamError;
}

export function cutFrames(buf: Uint8Array): FrameCut {
  const codec = loaded();
  const frames: EventStreamFrame[] = [];
  let at = 0;
  try {
    while (buf.length - at >= PRELUDE_BYTES) {
      const total = new DataView(buf.buffer, buf.byteOffset + at, 4).getUint32(0);
      if (total < PRELUDE_BYTES + 4 || total > MAX_FRAME_BYTES) {
        throw new EventStreamError(`event-stream frame length ${total} is out of range`);
      }
      if (buf.length - at < total) break;
      frames.push(decodeFrame(codec, buf.subarray(at, at + total)));
      at += total;
    }
  } catch (error) {
    return { frames, cut: at, error: error as EventStreamError };
  }
  return { frames, cut: at };
}

/** Decodes a byte stream into frames; a truncated last frame or a bad checksum errors it. */
export function eventStreamFrames(): TransformStream<Uint8Array, EventStreamFrame> {
  let buffer = new Uint8Array(0);
  return new TransformStream({
    start: loadEventStreams,
    transform(chunk, controller) {
      const joined = new Uint8Array(buffer.length + chunk.length);
      joined.set(buffer);
      joined.set(chunk, buffer.length);
      const { frames, cut, error } = cutFrames(joined);
      for (const frame of frames) controller.enqueue(frame);
      if (error) throw error;
      buffer = joined.slice(cut);
    },
    flush() {
      if (buffer.length) throw new EventStreamError("event stream ended inside a frame");
    },
  });
}
