/**
 * Talking to providers: the call (URL, credential, forwarded headers, deadline, cancellation),
 * the provider socket, the gateway's shutdown of open calls, and reading an upstream answer or
 * error. How a client's stream ends lives in src/stream_end.ts.
 */
import type { ProviderConfig } from "./config.ts";
import { fromProviderError, GatewayError } from "./contract/errors.ts";
import type { OutgoingRequest, UpstreamSpec } from "./contract/format.ts";
import { type HeaderPairs, headersFrom, pairsOf, pickHeaders, RETRY_HEADERS } from "./http.ts";
import type { Secrets } from "./secrets.ts";
import { ClientGone } from "./stream_end.ts";
import { Deadline } from "./deadline.ts";
import type { AnyPlatform } from "./contract/platform.ts";
import { type PlatformRequest, readPlatformError, sendThrough } from "./platforms.ts";

interface UpstreamRequest {
  provider: ProviderConfig;
  /** The provider's format: it credentials (or signs) the request. */
  spec: UpstreamSpec;
  /** The provider key to send (from its pool); none: the format sends no credential. */
  key?: string;
  /** Appended to the provider's base_url. */
  path: string;
  body: string;
  /** Allow-listed client headers to forward. */
  forward?: HeaderPairs;
  /** The client's request signal: its disconnect aborts the upstream call. */
  signal: AbortSignal;
  /** Stops when the gateway's shutdown grace runs out: the call ends as interrupted. */
  stopping?: Stopping;
  /** The provider's platform, if it names one: it addresses, credentials and shapes the call. */
  platform?: PlatformRequest;
}

export interface UpstreamResponse {
  res: Response;
  /**
   * The call's one deadline: first byte until the headers, then re-armed by whoever reads the
   * body; `release` clears it.
   */
  deadline: Deadline;
  /** The provider's name, for messages. */
  provider: string;
  /** Aborts the upstream request (used when the client disconnects or a timer fires). */
  abort: (reason?: unknown) => void;
  /** Stops watching the client's signal and the deadline, once the body is done with. */
  release: () => void;
  /** The platform the call went through, which reads its errors. */
  platform?: AnyPlatform;
}

/**
 * A client that keeps no idle connection, for providers without `keep_alive`: each call opens
 * its own, so Deno never replays a call on a reused connection behind the retry policy. Made at
 * load, once: it lives as long as the process.
 */
const ONE_CALL_CONNECTIONS = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });

export function upstreamUrl(provider: ProviderConfig, path: string): string {
  return provider.base_url!.replace(/\/+$/, "") + path;
}

const shuttingDown = () => new GatewayError(503, "overloaded", "the gateway is shutting down");

/**
 * Sends a request upstream and waits for its response headers, at most `first_byte_ms`
 * (Deno's fetch exposes no separate connect phase; a refused connection fails at once).
 */
export async function callUpstream(r: UpstreamRequest): Promise<UpstreamResponse> {
  const ctrl = new AbortController();
  const abort = (reason?: unknown) => ctrl.abort(reason);
  const unwatch = watchCancellation(r, abort);
  const deadline = new Deadline(abort);
  deadline.arm(r.provider.timeouts.first_byte_ms, "sent no response headers");
  const release = () => {
    deadline.clear();
    unwatch();
  };
  const out = {
    method: "POST",
    // A platform addresses its calls itself (sendThrough).
    url: new URL(
      r.platform ? r.platform.binding.provider.base_url : upstreamUrl(r.provider, r.path),
    ),
    headers: headersFrom(r.forward),
    body: r.body,
  };
  out.headers.set("content-type", "application/json");
  const client = r.provider.keep_alive ? undefined : ONE_CALL_CONNECTIONS;
  try {
    if (r.platform) {
      // Takes the request as an argument: a closure over `out` would keep its body alive as
      // long as `abort` and `release` (the whole stream), which share this function's context.
      const fetchOut = (o: OutgoingRequest) => send(o, ctrl.signal, client);
      const res = await sendThrough(r.platform, out, r.key, ctrl.signal, fetchOut);
      const { platform } = r.platform.binding;
      return { res, provider: r.provider.name, deadline, abort, release, platform };
    }
    // Most formats sign synchronously: no await (a turn of the microtask queue) for them.
    const signing = r.spec.authorize(out, r.key);
    if (signing) await signing;
    const res = await send(out, ctrl.signal, client);
    return { res, provider: r.provider.name, deadline, abort, release, platform: undefined };
  } catch (e) {
    release();
    const reason = ctrl.signal.reason;
    if (reason instanceof ClientGone || reason instanceof GatewayError) throw reason;
    // A platform's own refusal (a call it cannot address).
    if (e instanceof GatewayError) throw e;
    // Deno's message names the URL, not the key; it is scrubbed on the way out all the same.
    throw new GatewayError(502, "upstream", `upstream ${r.provider.name} unreachable: ${e}`);
  }
}

function send(
  out: OutgoingRequest,
  signal: AbortSignal,
  client: Deno.HttpClient | undefined,
): Promise<Response> {
  const { method, body } = out;
  return fetch(out.url, { method, headers: pairsOf(out.headers), body, signal, client });
}

/**
 * The gateway's shutdown, as far as open upstream calls are concerned: once the grace runs out,
 * `stop` cuts every call still watching. A set of calls rather than a listener per call on a
 * shared AbortSignal: adding and removing those showed on relayed JSON (docs/performance.md),
 * and removing one is linear in the listeners (thousands, with as many open streams).
 */
export class Stopping {
  #stopped = false;
  readonly #cuts = new Set<() => void>();

  /** Calls `cut` on stop (at once if stopped); returns the function that stops watching. */
  watch(cut: () => void): () => void {
    if (this.#stopped) cut();
    else this.#cuts.add(cut);
    return () => this.#cuts.delete(cut);
  }

  stop(): void {
    this.#stopped = true;
    for (const cut of this.#cuts) cut();
    this.#cuts.clear();
  }
}

/**
 * Calls `cancel` when the client leaves or the gateway's shutdown grace runs out (at once if
 * either happened already); returns the function that stops watching.
 */
function watchCancellation(
  // Destructured: the closures below live as long as the call, and must not keep the whole
  // request (its body) alive for a stream's duration.
  { signal, stopping }: Pick<UpstreamRequest, "signal" | "stopping">,
  cancel: (reason: unknown) => void,
): () => void {
  const onClientAbort = () => cancel(new ClientGone());
  if (signal.aborted) {
    onClientAbort();
    return () => {};
  }
  const unwatchStop = stopping?.watch(() => cancel(shuttingDown()));
  signal.addEventListener("abort", onClientAbort, { once: true });
  return () => {
    signal.removeEventListener("abort", onClientAbort);
    unwatchStop?.();
  };
}

/** A WebSocket dial: the same URL, credentials, deadlines and cancellation as an HTTP call. */
type SocketRequest = Omit<UpstreamRequest, "body">;

/**
 * Opens a provider's WebSocket (`ws[s]://` of its base_url + path), credentialed by its
 * format like any HTTP call, within `connect_ms`; the client leaving or the gateway stopping
 * abandons the dial.
 */
export function openUpstreamSocket(r: SocketRequest): Promise<WebSocket> {
  const { promise, resolve, reject } = Promise.withResolvers<WebSocket>();
  let ws: WebSocket | undefined;
  let settled = false;
  const fail = (e: unknown) => {
    if (settled) return;
    done();
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close();
    reject(e);
  };
  const deadline = new Deadline(fail);
  let unwatch = () => {};
  const done = () => {
    settled = true;
    deadline.clear();
    unwatch();
  };
  unwatch = watchCancellation(r, fail);
  if (settled) return promise; // the client or the gateway had already gone
  deadline.arm(r.provider.timeouts.connect_ms, "WebSocket did not open");
  const out = {
    method: "GET",
    url: new URL(upstreamUrl(r.provider, r.path).replace(/^http/, "ws")),
    headers: headersFrom(r.forward),
    body: "",
  };
  (async () => {
    await r.spec.authorize(out, r.key);
    if (settled) return;
    ws = new WebSocket(out.url, { headers: out.headers });
    ws.onopen = () => {
      if (settled) return ws!.close();
      done();
      resolve(ws!);
    };
    ws.onerror = () =>
      fail(new GatewayError(502, "upstream", `could not open the WebSocket of ${r.provider.name}`));
  })().catch((e) =>
    fail(new GatewayError(502, "upstream", `upstream ${r.provider.name} unreachable: ${e}`))
  );
  return promise;
}

/** The media type of a whole JSON body; a stream's is its format's (`text/event-stream`). */
export const JSON_TYPE = "application/json";

/**
 * A 2xx of the wrong content type (an HTML login page, a proxy's text) is not success: the
 * caller answers 502 instead of relaying garbage.
 */
export function checkContentType(up: UpstreamResponse, mediaType: string): void {
  const type = up.res.headers.get("content-type")?.toLowerCase() ?? "";
  const ok = mediaType === JSON_TYPE ? /[/+]json\b/.test(type) : type.startsWith(mediaType);
  if (ok) return;
  up.abort();
  up.release();
  throw new GatewayError(
    502,
    "upstream",
    `upstream ${up.provider} answered ${up.res.status} with content type ` +
      `${JSON.stringify(type.slice(0, 100) || "(none)")}, not ${mediaType}`,
  );
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
 * A 2xx JSON body: checked for its content type, read whole (at most the provider's
 * `max_body_mb`: a larger answer is a 502, not memory held), scrubbed of any provider key it
 * echoes (a debugging proxy may quote the request's credential in a success too), and parsed
 * (502 if invalid). A key is replaced inside its JSON string, so the document stays valid.
 */
export async function readUpstreamJson(
  up: UpstreamResponse,
  provider: Pick<ProviderConfig, "timeouts" | "max_body_mb">,
  secrets: Secrets,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; json: Record<string, unknown> }> {
  checkContentType(up, JSON_TYPE);
  const invalid = (why: string) =>
    new GatewayError(502, "upstream", `upstream ${up.provider} returned ${why}`);
  const max = provider.max_body_mb * MIB;
  let bytes = await readBody(up, provider.timeouts.idle_ms, max + 1);
  if (bytes.byteLength > max) {
    throw invalid(`a body over ${provider.max_body_mb} MiB (max_body_mb)`);
  }
  let text = decoder.decode(bytes);
  if (secrets.found(text)) {
    text = secrets.scrub(text);
    bytes = encoder.encode(text);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalid("invalid JSON");
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) throw invalid("a non-object JSON");
  return { bytes, json: json as Record<string, unknown> };
}

/** Error bodies are read this far at most; the rest is not needed for the message. */
const MAX_ERROR_BYTES = 64 * 1024;

/**
 * A non-2xx upstream body as text: bounded, scrubbed of provider keys. Scrubbed before it is
 * cut, or a key straddling the cut would go out as its first characters: the read goes on past
 * the bound by the longest form a key takes, and a body that long loses that much of its end.
 */
export async function readErrorText(
  up: UpstreamResponse,
  idleMs: number,
  secrets: Secrets,
): Promise<string> {
  const limit = MAX_ERROR_BYTES + secrets.longest;
  const bytes = await readBody(up, idleMs, limit).catch(() => new Uint8Array());
  const text = secrets.scrub(decoder.decode(bytes));
  // A body read to the limit may end in the first characters of a key: drop that many.
  return bytes.byteLength < limit ? text : text.slice(0, text.length - secrets.longest);
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
