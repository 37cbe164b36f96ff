/**
 * Reading a provider's answer once its headers are in (src/request/relay.ts makes the call): a JSON
 * body whole, bounded and scrubbed of keys; an error body as text, and what it says as the
 * gateway's error (the format's reading, then its platform's).
 */
import type { ProviderConfig } from "../config/config.ts";
import { fromProviderError, GatewayError } from "../kit/errors.ts";
import type { UpstreamSpec } from "../kit/format.ts";
import { headersFrom, RETRY_HEADERS, upstreamHeaders } from "./headers.ts";
import { readPlatformError } from "./platforms.ts";
import type { UpstreamResponse } from "./relay.ts";
import type { Secrets } from "../ops/secrets.ts";
import { ClientGone } from "./stream_end.ts";

/**
 * Upstream text that may quote a credential, scrubbed: of the provider keys, then of what the
 * call's credential scrubs (a SigV4 signature, quoted beside the access key id it names).
 */
export function scrubUpstream(
  up: Pick<UpstreamResponse, "scrubCredential">,
  secrets: Secrets,
  text: string,
): string {
  const scrubbed = secrets.scrub(text);
  return up.scrubCredential ? up.scrubCredential(scrubbed) : scrubbed;
}

/** Bodies up to this size are read in one call when their length is declared. */
const WHOLE_READ_BYTES = 1024 * 1024;

/** An upstream body read whole (at most `limit` bytes), under the idle deadline. */
async function readBody(
  up: UpstreamResponse,
  idleMs: number,
  limit: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const { deadline } = up;
  deadline.arm(idleMs, "went idle");
  const length = Number(up.res.headers.get("content-length") ?? NaN);
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  try {
    // A small body of declared length arrives at once: read it whole (Deno's fast path).
    if (length <= Math.min(limit, WHOLE_READ_BYTES)) return await up.res.bytes();
    for await (const chunk of up.res.body ?? []) {
      deadline.touch();
      chunks.push(chunk);
      size += chunk.byteLength;
      if (size >= limit) break;
    }
  } catch (e) {
    if (e instanceof ClientGone || e instanceof GatewayError) throw e;
    throw new GatewayError(
      502,
      "upstream",
      `upstream ${up.provider} failed while sending its body`,
    );
  } finally {
    up.release();
  }
  if (size >= limit) up.abort();
  return concatAll(chunks, Math.min(size, limit));
}

function concatAll(chunks: Uint8Array<ArrayBuffer>[], size: number): Uint8Array<ArrayBuffer> {
  if (chunks.length === 1 && chunks[0].byteLength === size) return chunks[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c.subarray(0, size - at), at);
    at += c.byteLength;
    if (at >= size) break;
  }
  return out;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

const MIB = 1024 * 1024;

/**
 * A 2xx JSON body (its content type checked by the call): read whole (at most the provider's
 * `max_body_mb`: a larger answer is a 502, not memory held), scrubbed of any provider key it
 * echoes (a debugging proxy may quote the request's credential in a success too), and parsed
 * (502 if invalid). A key is replaced inside its JSON string, so the document stays valid.
 */
export async function readUpstreamJson(
  up: UpstreamResponse,
  provider: Pick<ProviderConfig, "timeouts" | "max_body_mb">,
  secrets: Secrets,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; json: Record<string, unknown> }> {
  const invalid = (why: string) =>
    new GatewayError(502, "upstream", `upstream ${up.provider} returned ${why}`);
  const max = provider.max_body_mb * MIB;
  let bytes = await readBody(up, provider.timeouts.idle_ms, max + 1);
  if (bytes.byteLength > max) {
    throw invalid(`a body over ${provider.max_body_mb} MiB (max_body_mb)`);
  }
  let text = decoder.decode(bytes);
  if (secrets.found(text)) {
    // An echoed header names the access key id: the signature beside it goes too.
    text = scrubUpstream(up, secrets, text);
    bytes = encoder.encode(text);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalid("invalid JSON");
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) throw invalid("a non-object JSON");
  const reshaped = up.reshape?.(json as Record<string, unknown>);
  if (reshaped) return { bytes: encoder.encode(JSON.stringify(reshaped)), json: reshaped };
  return { bytes, json: json as Record<string, unknown> };
}

/** Error bodies are read this far at most; the rest is not needed for the message. */
const MAX_ERROR_BYTES = 64 * 1024;

/**
 * A non-2xx upstream body as text: bounded, scrubbed of provider keys (and of what the call's
 * credential scrubs: its SigV4 signature). Scrubbed before it is cut, or a key straddling the cut
 * would go out as its first characters: the read goes on past the bound by the longest form a key
 * takes, and a body that long loses that much of its end.
 */
export async function readErrorText(
  up: UpstreamResponse,
  idleMs: number,
  secrets: Secrets,
): Promise<string> {
  const limit = MAX_ERROR_BYTES + secrets.longest;
  const bytes = await readBody(up, idleMs, limit).catch(() => new Uint8Array());
  const text = scrubUpstream(up, secrets, decoder.decode(bytes));
  // A body read to the limit may end in the first characters of a key: drop that many.
  return bytes.byteLength < limit ? text : text.slice(0, text.length - secrets.longest);
}

/** Reads an upstream error response and re-wraps it as a GatewayError (status kept). */
export async function upstreamError(
  up: UpstreamResponse,
  idleMs: number,
  secrets: Secrets,
  spec: UpstreamSpec,
): Promise<GatewayError> {
  const text = await readErrorText(up, idleMs, secrets);
  const headers = headersFrom(upstreamHeaders(up.res, RETRY_HEADERS, secrets));
  return readProviderError(up, text, headers, spec);
}

/**
 * An error answer (its text scrubbed) as the provider's format reads it, then its platform.
 * `headers`: those worth relaying with the error.
 */
export function readProviderError(
  up: UpstreamResponse,
  text: string,
  headers: Headers,
  spec: UpstreamSpec,
): GatewayError {
  const err = fromProviderError(up.res.status, text, headers, spec);
  return up.platform
    ? readPlatformError(up.platform, err, up.res.status, up.res.headers, text)
    : err;
}
