/**
 * Compressed request bodies (`Content-Encoding`): decoded as they arrive, counted after decoding,
 * so a small compressed body that inflates past the limit stops there. Node's zlib streams (Deno
 * provides them) decode all four codings and hand out bounded chunks with backpressure; the web
 * DecompressionStream knows neither `br` nor `zstd` and inflates a whole input chunk at once.
 */
import { pipeline, Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import * as zlib from "node:zlib";
import { badRequest, GatewayError } from "./errors.ts";

const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: () => zlib.createGunzip(),
  "x-gzip": () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
  zstd: () => zlib.createZstdDecompress(),
};

/** The codings of a `Content-Encoding` header, in the order they were applied. */
export function codingsOf(header: string): string[] {
  const codings = header.split(",").map((c) => c.trim().toLowerCase())
    .filter((c) => c && c !== "identity");
  const unknown = codings.find((c) => !(c in DECODERS));
  if (unknown !== undefined) {
    throw new GatewayError(
      415,
      "invalid_request",
      `Content-Encoding "${unknown}" is not supported (send gzip, deflate, br, zstd or none)`,
    );
  }
  return codings;
}

/**
 * The decoded bytes of a body sent with `codings`; throws `tooLarge()` as soon as they pass
 * `limit` (the rest is neither read nor inflated).
 */
export async function readDecoded(
  body: ReadableStream<Uint8Array> | null,
  codings: string[],
  limit: number,
  tooLarge: () => GatewayError,
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
      if (size > limit) throw tooLarge();
      chunks.push(chunk);
    }
  } catch (e) {
    if (e instanceof GatewayError) throw e;
    throw badRequest(`request body is not valid ${codings.join(", ")}: ${(e as Error).message}`);
  } finally {
    decoded.destroy();
  }
  return concat(chunks, size);
}

export function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}
