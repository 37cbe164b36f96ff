/**
 * The mock's own AWS event-stream frame encoder, written from the format (not the library the
 * gateway decodes with, so that a shared bug cannot hide): total length, headers length,
 * prelude CRC32, headers, payload, message CRC32, all big-endian. Every header is a string
 * (type 7), which is all Bedrock sends.
 */

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE 802.3), as the event-stream prelude and message checksums use. */
export function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) crc = CRC_TABLE[(crc ^ b) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const STRING_TYPE = 7;

function encodeHeaders(headers: Record<string, string>): Uint8Array {
  const encoder = new TextEncoder();
  const parts = Object.entries(headers).flatMap(([name, value]) => {
    const n = encoder.encode(name);
    const v = encoder.encode(value);
    const head = new Uint8Array(1 + n.length + 3);
    head[0] = n.length;
    head.set(n, 1);
    head[1 + n.length] = STRING_TYPE;
    new DataView(head.buffer).setUint16(2 + n.length, v.length);
    return [head, v];
  });
  return concat(parts);
}

/** The parts one after the other (frames into a stream's bytes). */
export function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** One frame carrying `payload` under `headers`. */
export function encodeFrame(headers: Record<string, string>, payload: Uint8Array): Uint8Array {
  const head = encodeHeaders(headers);
  const total = 12 + head.length + payload.length + 4;
  const frame = new Uint8Array(total);
  const view = new DataView(frame.buffer);
  view.setUint32(0, total);
  view.setUint32(4, head.length);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  frame.set(head, 12);
  frame.set(payload, 12 + head.length);
  view.setUint32(total - 4, crc32(frame.subarray(0, total - 4)));
  return frame;
}

/**
 * A frame with a JSON payload (a string is sent verbatim): an `event` named by `:event-type`, or
 * an `exception`.
 */
function jsonFrame(messageType: "event" | "exception", type: string, data: unknown) {
  const json = typeof data === "string" ? data : JSON.stringify(data);
  return encodeFrame({
    [`:${messageType}-type`]: type,
    ":content-type": "application/json",
    ":message-type": messageType,
  }, new TextEncoder().encode(json));
}

/** An `event` frame of type `eventType` (e.g. `contentBlockDelta`, `chunk`). */
export const eventFrame = (eventType: string, data: unknown) => jsonFrame("event", eventType, data);

/** An `exception` frame (e.g. `throttlingException`) with Bedrock's `{"message"}` payload. */
export const exceptionFrame = (exceptionType: string, data: unknown) =>
  jsonFrame("exception", exceptionType, data);

/** One decoded frame: its string headers and its payload. */
export interface DecodedFrame {
  headers: Record<string, string>;
  payload: Uint8Array;
}

/**
 * Frames out of a stream's bytes, decoded from the format as the encoder above writes it (both
 * checksums checked); a truncated or corrupt frame throws.
 */
export function decodeFrames(bytes: Uint8Array): DecodedFrame[] {
  const frames: DecodedFrame[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at < bytes.length;) {
    if (bytes.length - at < 16) throw new Error(`a truncated frame at byte ${at}`);
    const total = view.getUint32(at);
    const headersLength = view.getUint32(at + 4);
    if (at + total > bytes.length) throw new Error(`a truncated frame at byte ${at}`);
    if (view.getUint32(at + 8) !== crc32(bytes.subarray(at, at + 8))) {
      throw new Error(`a bad prelude checksum at byte ${at}`);
    }
    if (view.getUint32(at + total - 4) !== crc32(bytes.subarray(at, at + total - 4))) {
      throw new Error(`a bad message checksum at byte ${at}`);
    }
    const headers: Record<string, string> = {};
    const decoder = new TextDecoder();
    for (let h = at + 12; h < at + 12 + headersLength;) {
      const nameLength = bytes[h];
      const name = decoder.decode(bytes.subarray(h + 1, h + 1 + nameLength));
      const type = bytes[h + 1 + nameLength];
      if (type !== STRING_TYPE) throw new Error(`header ${name}: type ${type} is not a string`);
      const valueLength = view.getUint16(h + 2 + nameLength);
      const start = h + 4 + nameLength;
      headers[name] = decoder.decode(bytes.subarray(start, start + valueLength));
      h = start + valueLength;
    }
    frames.push({ headers, payload: bytes.subarray(at + 12 + headersLength, at + total - 4) });
    at += total;
  }
  return frames;
}
