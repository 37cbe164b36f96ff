/** HTTP helpers shared by the endpoints: body parsing and header allow-lists. */
import {
  codingsOf,
  concat,
  decode,
  DecodedTooLarge,
  isSupported,
  SUPPORTED_CODINGS,
} from "./content_encoding.ts";
import { badRequest, GatewayError } from "./contract/errors.ts";
import type { UpstreamFraming } from "./contract/framing.ts";
import type { JsonBody } from "./contract/generation.ts";
import { clip, MAX_MODEL_CHARS } from "./model_name.ts";
import type { Secrets } from "./secrets.ts";

/** Matches Anthropic's documented request limit; Kong may enforce a smaller one. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

const tooLarge = () =>
  new GatewayError(413, "request_too_large", `request body exceeds ${MAX_BODY_BYTES} bytes`);

/**
 * The body as text, refusing (without buffering further) once it passes the limit. A compressed
 * body is decoded first, and the limit applies to what it decodes to.
 */
function readLimited(req: Request): Promise<string> {
  const length = req.headers.get("content-length");
  if (Number(length ?? 0) > MAX_BODY_BYTES) throw tooLarge();
  // `identity` (or an empty header) names no coding: the body is read as sent.
  const codings = codingsOf(req.headers.get("content-encoding") ?? "");
  if (codings.length) return readEncoded(req.body, codings);
  // A declared length is enforced by Deno: the whole-body read is its fast native path (and
  // `req.body` is not touched: that would make it a JS stream, read chunk by chunk).
  return length !== null ? req.text() : readChunked(req);
}

/** A compressed body, decoded; the limit counts the decoded bytes. */
async function readEncoded(body: ReadableStream<Uint8Array> | null, codings: string[]) {
  const unknown = codings.find((c) => !isSupported(c));
  if (unknown !== undefined) {
    throw new GatewayError(
      415,
      "invalid_request",
      `Content-Encoding "${clip(unknown)}" is not supported (send ${SUPPORTED_CODINGS} or none)`,
    );
  }
  try {
    return new TextDecoder().decode(await decode(body, codings, MAX_BODY_BYTES));
  } catch (e) {
    if (e instanceof DecodedTooLarge) throw tooLarge();
    throw badRequest(`request body is not valid ${codings.join(", ")}: ${(e as Error).message}`);
  }
}

/** A body of undeclared length (chunked), counted as it arrives. */
async function readChunked(req: Request): Promise<string> {
  return new TextDecoder().decode(await chunkedBytes(req));
}

async function chunkedBytes(req: Request): Promise<Uint8Array<ArrayBuffer>> {
  if (!req.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return concat(chunks, size);
}

/**
 * The body's bytes exactly as sent (a compressed one still compressed: what a request signature
 * covers), refused once past the limit.
 */
export function readBodyBytes(req: Request): Promise<Uint8Array<ArrayBuffer>> {
  const length = req.headers.get("content-length");
  if (Number(length ?? 0) > MAX_BODY_BYTES) throw tooLarge();
  return length !== null ? req.bytes() : chunkedBytes(req);
}

/** Byte chunks as one (a lone chunk as is). */
export function joinBytes(parts: readonly Uint8Array[]): Uint8Array {
  return parts.length === 1
    ? parts[0]
    : concat([...parts], parts.reduce((n, p) => n + p.length, 0));
}

/** Where a JSON.parse error is, never its message: that quotes the text (it may hold a prompt). */
export function jsonErrorPosition(e: unknown): string {
  const at = String((e as Error).message).match(/position (\d+)/)?.[1];
  return at ? ` (at character ${at})` : "";
}

/** Bodies above this size let other requests run between their costly synchronous steps. */
const LARGE_BODY_CHARS = 1024 * 1024;

/**
 * Whether a body is large enough that other requests should run between its costly synchronous
 * steps (callers `await breather()` then; a small body does not even await: each await costs a
 * turn of the microtask queue on the hot path).
 */
export const isLarge = (chars: number) => chars > LARGE_BODY_CHARS;

/** Large bodies waiting for their next synchronous step, in the order they asked. */
const breathing: (() => void)[] = [];
/** A step is running (until its first await), or the timer of the next one is set. */
let busy = false;

/**
 * Lets the event loop serve others before a large body's next synchronous step. Concurrent
 * large bodies take turns, one step per timer turn, and the next turn is set only once a step
 * has run: with a timer each, their timers fell due together and their steps ran back to back,
 * one stall as long as all of them.
 */
export function breather(): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  breathing.push(resolve);
  if (!busy) nextTurn();
  return promise;
}

function nextTurn() {
  busy = breathing.length > 0;
  if (busy) setTimeout(step, 0);
}

function step() {
  breathing.shift()!();
  // Queued after the step's own continuation: runs once the step reached its next await.
  queueMicrotask(nextTurn);
}

export async function readJsonBody(req: Request): Promise<JsonBody> {
  const raw = await readLimited(req);
  const large = isLarge(raw.length);
  if (large) await breather();
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (e) {
    throw badRequest(`request body is not valid JSON${jsonErrorPosition(e)}`);
  }
  if (large) await breather();
  if (!json || typeof json !== "object" || Array.isArray(json)) {
    throw badRequest("request body must be a JSON object");
  }
  return { json: json as Record<string, unknown>, raw };
}

/**
 * Header pairs, distinct names, as `pickHeaders` yields them: set once where they end up
 * (`respond`, `headersFrom`), with no intermediate `Headers` to copy them through.
 */
export type HeaderPairs = [string, string][];

/**
 * The headers whose names are listed, or start with a listed prefix ending in `-`. `forEach`,
 * not `for…of`: Deno's header iterator is dearer on the JSON path (docs/performance.md).
 */
export function pickHeaders(from: Headers, allow: readonly string[]): HeaderPairs {
  const { names, prefixes } = compiled(allow);
  const out: HeaderPairs = [];
  from.forEach((v, k) => {
    if (names.has(k) || prefixes.some((p) => k.startsWith(p))) out.push([k, v]);
  });
  return out;
}

/** Allow-lists are fixed at startup: each is split into names and prefixes once. */
const compiledLists = new WeakMap<readonly string[], { names: Set<string>; prefixes: string[] }>();

function compiled(allow: readonly string[]) {
  let c = compiledLists.get(allow);
  if (!c) {
    c = {
      names: new Set(allow.filter((a) => !a.endsWith("-"))),
      prefixes: allow.filter((a) => a.endsWith("-")),
    };
    compiledLists.set(allow, c);
  }
  return c;
}

/**
 * Sets each pair on `headers` and returns it. Deno converts a `headers` init (pairs, a record or a
 * `Headers`) through WebIDL's generic sequence conversion, several times dearer than `set`
 * (docs/performance.md). Names must be distinct: a later pair replaces an earlier one.
 */
function setAll(headers: Headers, pairs: Iterable<readonly [string, string]>): Headers {
  for (const [name, value] of pairs) headers.set(name, value);
  return headers;
}

/** A response with these headers, set once it is built rather than passed in its init. */
export function respond(
  body: BodyInit | null,
  status: number,
  headers: Iterable<readonly [string, string]>,
): Response {
  const res = new Response(body, { status });
  setAll(res.headers, headers);
  return res;
}

/** `Headers` holding these pairs, set one by one rather than passed to its constructor. */
export const headersFrom = (pairs: HeaderPairs = []): Headers => setAll(new Headers(), pairs);

/**
 * Every header as pairs, for a `fetch` init: Deno converts a `Headers` there by generic iteration,
 * slower than the pairs it would be made of (docs/performance.md).
 */
export function pairsOf(headers: Headers): HeaderPairs {
  const out: HeaderPairs = [];
  headers.forEach((value, name) => out.push([name, value]));
  return out;
}

export const RETRY_HEADERS = ["retry-after", "retry-after-ms", "x-should-retry"] as const;

export const STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
} as const;

/**
 * A relayed answer with the provider's headers. A stream (`framing`) keeps the provider's own
 * content type (it need not be SSE) unless its framing re-frames it; the stream headers fill
 * in the rest.
 */
export function respondRelayed(
  body: BodyInit,
  status: number,
  headers: Iterable<readonly [string, string]>,
  framing: Pick<UpstreamFraming, "relayedType"> | undefined,
): Response {
  const res = respond(body, status, headers);
  if (!framing) return res;
  for (const [k, v] of Object.entries(STREAM_HEADERS)) {
    if (!res.headers.has(k)) res.headers.set(k, v);
  }
  if (framing.relayedType) res.headers.set("content-type", framing.relayedType);
  res.headers.set("x-accel-buffering", "no");
  return res;
}

/**
 * A path segment, percent-decoded; a malformed escape (`%ZZ`, a lone `%E2`) is the client's 400
 * naming `field`, not an internal error. The segment is not quoted: it may be any length.
 */
export function decodePathSegment(segment: string, field: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`${field}: malformed percent-encoding in the request path`, field);
  }
}

/** The `model` field every generation body must carry. */
export function modelOf(json: Record<string, unknown>): string {
  if (typeof json.model !== "string" || json.model === "") {
    throw badRequest("model: required, expected a non-empty string", "model");
  }
  return checkModelName(json.model);
}

/** `model`, or a 400 naming it when it is over the bound (see model_name.ts). */
export function checkModelName(model: string): string {
  if (model.length > MAX_MODEL_CHARS) {
    throw badRequest(
      `model: ${model.length} characters is longer than the limit of ${MAX_MODEL_CHARS}`,
      "model",
    );
  }
  return model;
}

/** A boolean flag that may be absent. */
export function flagOf(json: Record<string, unknown>, field: string): boolean {
  const v = json[field];
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") throw badRequest(`${field}: expected boolean`, field);
  return v;
}

/** Retry hints a client's SDK acts on: relayed only in the form it expects. */
const WELL_FORMED: Record<string, RegExp> = {
  // Seconds, or an HTTP date (IMF-fixdate), as RFC 9110 has it.
  "retry-after": /^(\d+|[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)$/,
  "retry-after-ms": /^\d+(\.\d+)?$/,
  "x-should-retry": /^(true|false)$/,
};

/**
 * The provider's response headers a client sees: the allow-listed ones, values scrubbed of keys
 * (a proxy may echo the credential into a request id), retry hints dropped unless well-formed.
 */
export function upstreamHeaders(
  res: Response,
  allow: readonly string[],
  secrets: Secrets,
): HeaderPairs {
  const out = pickHeaders(res.headers, allow)
    .filter(([name, value]) => WELL_FORMED[name]?.test(value) ?? true);
  // One search over all the values: they almost never hold a key.
  if (!secrets.found(out.map(([, value]) => value).join("\n"))) return out;
  return out.map(([name, value]) => [name, secrets.scrub(value)]);
}
