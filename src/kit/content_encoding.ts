/**
 * Compressed request bodies (`Content-Encoding`): decoded as they arrive, counted after decoding,
 * so a small compressed body that inflates past the limit stops there. Node's zlib streams (Deno
 * provides them) decode all four codings and hand out bounded chunks with backpressure; the web
 * DecompressionStream knows neither `br` nor `zstd` and inflates a whole input chunk at once.
 */
import type { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";

/**
 * The largest zstd window a decoder accepts: 8 MiB, the bound RFC 9659 sets for the `zstd`
 * content coding (the library's own default is 128 MiB, allocated as the frame header asks).
 */
const ZSTD_WINDOW_LOG_MAX = 23;

type Zlib = typeof import("node:zlib");

const DECODERS: Record<string, (zlib: Zlib) => NodeJS.ReadWriteStream> = {
  gzip: (zlib) => zlib.createGunzip(),
  "x-gzip": (zlib) => zlib.createGunzip(),
  deflate: (zlib) => zlib.createInflate(),
  br: (zlib) => zlib.createBrotliDecompress(),
  zstd: (zlib) =>
    zlib.createZstdDecompress({
      params: { [zlib.constants.ZSTD_d_windowLogMax]: ZSTD_WINDOW_LOG_MAX },
    }),
};

export const SUPPORTED_CODINGS = "gzip, deflate, br, zstd";

/**
 * Codings a body may be sent with, one over another. Each is a decoder with its own buffers
 * (a zstd one holds a window of up to 8 MiB): ten thousand `zstd` in a 50 KB header cost 415 MB
 * and 3 s for one tiny body. Real clients send one; two leave room for a proxy that compresses
 * again.
 */
export const MAX_CODINGS = 2;

/**
 * The codings of a `Content-Encoding` header, in the order they were applied; at most
 * MAX_CODINGS + 1 are read (more than MAX_CODINGS is refused, however many the header lists).
 */
export function codingsOf(header: string): string[] {
  const codings: string[] = [];
  for (let at = 0; at <= header.length && codings.length <= MAX_CODINGS;) {
    const comma = header.indexOf(",", at);
    const end = comma === -1 ? header.length : comma;
    const coding = header.slice(at, end).trim().toLowerCase();
    if (coding && coding !== "identity") codings.push(coding);
    at = end + 1;
  }
  return codings;
}

export const isSupported = (coding: string) => Object.hasOwn(DECODERS, coding);

/** The body (as sent, or decoded) passed the limit; the rest was neither read nor inflated. */
export class BodyTooLarge extends Error {}

/**
 * The decoded bytes of a body sent with `codings` (all supported, at most MAX_CODINGS). Throws
 * BodyTooLarge as soon as either the bytes received or the bytes they decode to pass `limit`
 * (a stream of zstd skippable frames decodes to nothing, however long it runs), and the
 * decoder's error for data that is not what its coding says. `signal` aborting cancels the body
 * and fails the decode.
 */
export async function decode(
  body: ReadableStream<Uint8Array> | null,
  codings: string[],
  limit: number,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  // Loaded on first use: Node's streams and zlib hold heap (a cost to every request's garbage
  // collection) that a gateway whose clients send plain bodies never uses.
  const [{ pipeline, Readable }, zlib] = await Promise.all([
    import("node:stream"),
    import("node:zlib"),
  ]);
  const streams = [
    Readable.fromWeb(body.pipeThrough(counted(limit), { signal }) as NodeReadableStream),
    ...codings.toReversed().map((c) => DECODERS[c](zlib)),
  ];
  // `pipeline` passes an error (a client gone, bad data) on to the last stream, and destroys all.
  const decoded = (pipeline as (...s: unknown[]) => Readable)(...streams, () => {});
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of decoded) {
      size += chunk.byteLength;
      if (size > limit) throw new BodyTooLarge();
      chunks.push(chunk);
    }
  } finally {
    decoded.destroy();
  }
  return concat(chunks, size);
}

/** Passes bytes on until more than `limit` went by, then fails with BodyTooLarge. */
function counted(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  return new TransformStream({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > limit) throw new BodyTooLarge();
      controller.enqueue(chunk);
    },
  });
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
