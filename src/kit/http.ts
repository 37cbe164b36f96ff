/**
 * HTTP helpers of the plugin kit: a request body read (bounded, decoded) and parsed, the fields
 * every generation body carries, path segments, and the headers of an SSE answer.
 */
import {
  BodyTooLarge,
  codingsOf,
  concat,
  decode,
  isSupported,
  MAX_CODINGS,
  SUPPORTED_CODINGS,
} from "./content_encoding.ts";
import { clock, type Watched } from "./clock.ts";
import { badRequest, ClientGone, GatewayError } from "./errors.ts";
import type { JsonBody } from "./generation.ts";
import { clip, MAX_MODEL_CHARS } from "./model_name.ts";

/** Header pairs, names lowercase and distinct (as Deno's `Headers` iterates them). */
export type HeaderPairs = [string, string][];

/**
 * Every header as pairs, in one pass. On a request `Deno.serve` made, each pass over its
 * `Headers` (`forEach`, iteration) lowercases and sorts them all again, and a `get` of a header
 * the request lacks scans them natively: the core reads a request's headers once, through this
 * (docs/performance.md).
 */
export function pairsOf(headers: Headers): HeaderPairs {
  const out: HeaderPairs = [];
  headers.forEach((value, name) => out.push([name, value]));
  return out;
}

/** Matches Anthropic's documented request limit; Kong may enforce a smaller one. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

const tooLarge = () =>
  new GatewayError(413, "request_too_large", `request body exceeds ${MAX_BODY_BYTES} bytes`);

/**
 * Declared bodies up to this size are read whole by Deno's native read (its fastest path); larger
 * ones, and bodies of undeclared length or compressed, are read chunk by chunk so the deadline can
 * drop them. A stalled whole read can hold at most this much, in Deno's own read, until its client
 * leaves (docs/security-and-faults.md).
 */
const WHOLE_READ_BYTES = 1024 * 1024;

/** A body not received in time: the client's slowness, answered in its dialect. */
const bodyTimeout = (ms: number) =>
  new GatewayError(
    408,
    "invalid_request",
    `request body not received within request_body_timeout_ms (${ms} ms)`,
  );

/**
 * A body read's deadline, on the shared clock (no timer of its own: one per request showed on
 * relayed JSON, docs/performance.md): past it the read fails with the 408, and `drop` lets go of
 * what the read holds.
 */
class BodyDeadline implements Watched {
  private readonly since = performance.now();

  constructor(
    private readonly ms: number,
    private readonly fail: (e: GatewayError) => void,
    private readonly drop?: () => void,
  ) {}

  check(now: number): void {
    if (now - this.since < this.ms) return;
    clock.unwatch(this);
    this.fail(bodyTimeout(this.ms));
    this.drop?.();
  }
}

/**
 * `read`, or the 408 once `ms` passed; a read failing after the 408 is nobody's to handle. A body
 * that stops before its end (the client left mid-body) is the client's cut. One promise in all:
 * every request's body passes here.
 */
function beforeDeadline<T>(read: Promise<T>, ms: number, drop?: () => void): Promise<T> {
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  const deadline = new BodyDeadline(ms, reject, drop);
  clock.watch(deadline);
  read.then((v) => {
    clock.unwatch(deadline);
    resolve(v);
  }, (e) => {
    clock.unwatch(deadline);
    reject(
      e instanceof GatewayError ? e : new ClientGone("the client's body was cut", { cause: e }),
    );
  });
  return promise;
}

/**
 * Whether a body is read whole by Deno: declared, at most WHOLE_READ_BYTES, sent as is (a
 * declared length is enforced by Deno, and the whole-body read is its fast native path: `req.body`
 * is not touched, that would make it a JS stream, read chunk by chunk). A 413 past the limit.
 */
function readsWhole(length: string | null, coded: boolean): boolean {
  if (Number(length ?? 0) > MAX_BODY_BYTES) throw tooLarge();
  return !coded && length !== null && Number(length) <= WHOLE_READ_BYTES;
}

/** `read` given a signal that aborts at the deadline, or the 408 then. */
function streamedWithin<T>(ms: number, read: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const deadline = new AbortController();
  return beforeDeadline(read(deadline.signal), ms, () => deadline.abort());
}

/**
 * The body as text, refusing (without buffering further) once it passes the limit or the
 * deadline. A compressed body is decoded first, and the limit applies to what it decodes to.
 */
function readLimited(req: Request, headers: HeaderPairs, deadlineMs: number): Promise<string> {
  const { length, encoding } = bodyHeaders(headers);
  // `identity` (or an empty header) names no coding: the body is read as sent.
  const codings = encoding ? codingsOf(encoding) : undefined;
  const coded = codings !== undefined && codings.length > 0;
  const whole = readsWhole(length, coded);
  if (coded) checkCodings(codings);
  if (whole) return beforeDeadline(req.text(), deadlineMs);
  return streamedWithin(deadlineMs, async (signal) =>
    new TextDecoder().decode(
      coded ? await readEncoded(req.body, codings, signal) : await chunkedBytes(req, signal),
    ));
}

/** The body's declared length and coding, from the request's headers read once. */
function bodyHeaders(headers: HeaderPairs) {
  const found: { length: string | null; encoding: string | null } = {
    length: null,
    encoding: null,
  };
  for (const [name, value] of headers) {
    if (name === "content-length") found.length = value;
    else if (name === "content-encoding") found.encoding = value;
  }
  return found;
}

/** The codings are checked before any decoder is made or any byte read. */
function checkCodings(codings: string[]) {
  if (codings.length > MAX_CODINGS) {
    throw unsupportedEncoding(
      `Content-Encoding lists more than ${MAX_CODINGS} codings (the gateway decodes at most ${MAX_CODINGS})`,
    );
  }
  const unknown = codings.find((c) => !isSupported(c));
  if (unknown !== undefined) {
    throw unsupportedEncoding(
      `Content-Encoding "${clip(unknown)}" is not supported (send ${SUPPORTED_CODINGS} or none)`,
    );
  }
}

/** A compressed body, decoded; the limit counts the decoded bytes (and the bytes as sent). */
async function readEncoded(
  body: ReadableStream<Uint8Array> | null,
  codings: string[],
  signal: AbortSignal,
) {
  try {
    return await decode(body, codings, MAX_BODY_BYTES, signal);
  } catch (e) {
    if (e instanceof BodyTooLarge) throw tooLarge();
    throw badRequest(`request body is not valid ${codings.join(", ")}: ${(e as Error).message}`);
  }
}

const unsupportedEncoding = (message: string) => new GatewayError(415, "invalid_request", message);

/** A body of undeclared (or large) length, counted as it arrives. */
async function chunkedBytes(req: Request, signal: AbortSignal): Promise<Uint8Array<ArrayBuffer>> {
  const bytes = await readAtMost(req.body, MAX_BODY_BYTES, signal);
  if (!bytes) throw tooLarge();
  return bytes;
}

/**
 * A body read whole, or `undefined` once it passes `max` bytes: the rest is then neither read nor
 * held (the stream is cancelled), as when `signal` aborts. For any body from outside that has no
 * other bound.
 */
export async function readAtMost(
  body: ReadableStream<Uint8Array> | null,
  max: number,
  signal?: AbortSignal,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body?.getReader();
  const cancel = () => reader?.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", cancel, { once: true });
  try {
    for (let read = await reader?.read(); read && !read.done; read = await reader!.read()) {
      size += read.value.byteLength;
      if (size > max) {
        cancel();
        return undefined;
      }
      chunks.push(read.value);
    }
  } finally {
    signal?.removeEventListener("abort", cancel);
  }
  signal?.throwIfAborted();
  return concat(chunks, size);
}

/**
 * The body's bytes exactly as sent (a compressed one still compressed: what a request signature
 * covers), refused once past the limit or the deadline.
 */
export function readBodyBytes(req: Request, deadlineMs: number): Promise<Uint8Array<ArrayBuffer>> {
  return readsWhole(req.headers.get("content-length"), false)
    ? beforeDeadline(req.bytes(), deadlineMs)
    : streamedWithin(deadlineMs, (signal) => chunkedBytes(req, signal));
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

/**
 * The request's JSON object body, read within `deadlineMs` (`request_body_timeout_ms`: handlers
 * ask `ctx.jsonBody()`); `headers`: the request's, read once (`pairsOf`).
 */
export async function readJsonBody(
  req: Request,
  headers: HeaderPairs,
  deadlineMs: number,
): Promise<JsonBody> {
  const raw = await readLimited(req, headers, deadlineMs);
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

/** The headers of a JSON answer sent as text already made (as `Response.json` sets them). */
export const JSON_HEADERS = { "content-type": "application/json" } as const;

/** The headers of every SSE answer, relayed or written by the gateway. */
export const STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
} as const;
