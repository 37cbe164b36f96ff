/**
 * AWS event-stream framing (application/vnd.amazon.eventstream), as Bedrock streams Converse
 * and InvokeModel answers: frames are cut out of the byte stream by their length prefix (a
 * frame boundary is not a chunk boundary) and decoded by Smithy's codec, which checks both
 * CRC32s. Only string headers are kept: `:message-type`, `:event-type`, `:exception-type`
 * and `:content-type` are all Bedrock sends.
 */
// @smithy/eventstream-codec now re-exports this (deprecated there); this is its home.
import { EventStreamCodec } from "@smithy/core/event-streams";

export interface EventStreamFrame {
  headers: Record<string, string>;
  payload: Uint8Array;
}

const codec = new EventStreamCodec(
  (bytes: Uint8Array) => new TextDecoder().decode(bytes),
  (text: string) => new TextEncoder().encode(text),
);

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
  return codec.encode({ headers, body: frame.payload });
}

function decodeFrame(bytes: Uint8Array): EventStreamFrame {
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
  const frames: EventStreamFrame[] = [];
  let at = 0;
  try {
    while (buf.length - at >= PRELUDE_BYTES) {
      const total = new DataView(buf.buffer, buf.byteOffset + at, 4).getUint32(0);
      if (total < PRELUDE_BYTES + 4 || total > MAX_FRAME_BYTES) {
        throw new EventStreamError(`event-stream frame length ${total} is out of range`);
      }
      if (buf.length - at < total) break;
      frames.push(decodeFrame(buf.subarray(at, at + total)));
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
