/**
 * Compressed request bodies (`Content-Encoding`): decoded as they arrive, counted after decoding,
 * so a small compressed body that inflates past the limit stops there. Node's zlib streams (Deno
 * provides them) decode all four codings and hand out bounded chunks with backpressure; the web
 * DecompressionStream knows neither `br` nor `zstd` and inflates a whole input chunk at once.
 */
import { pipeline, Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import * as zlib from "node:zlib";

const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: () => zlib.createGunzip(),
  "x-gzip": () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
  zstd: () => zlib.createZstdDecompress(),
};

export const SUPPORTED_CODINGS = "gzip, deflate, br, zstd";

/** The codings of a `Content-Encoding` header, in the order they were applied. */
export const codingsOf = (header: string): string[] =>
  header.split(",").map((c) => c.trim().toLowerCase()).filter((c) => c && c !== "identity");

export const isSupported = (coding: string) => Object.hasOwn(DECODERS, coding);

/** The decoded body passed the limit; the rest was neither read nor inflated. */
export class DecodedTooLarge extends Error {}

/**
 * The decoded bytes of a body sent with `codings` (all supported). Throws DecodedTooLarge as soon
 * as they pass `limit`, and the decoder's error for data that is not what its coding says.
 */
export async function decode(
  body: ReadableStream<Uint8Array> | null,
  codings: string[],
  limit: number,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  const streams = [
    Readable.fromWeb(body as NodeReadableStream),
    ...codings.toReversed().map((c) => DECODERS[c]()),
  ];
  // `pipeline` passes an error (a client gone, bad data) on to the last stream, and destroys all.
  const decoded = (pipeline as (...s: unknown[]) => Readable)(...streams, () => {});
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of decoded) {
      size += chunk.byteLength;
      if (size > limit) throw new DecodedTooLarge();
      chunks.push(chunk);
    }
  } finally {
    decoded.destroy();
  }
  return concat(chunks, size);
}

export function concat(chunks: Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}
