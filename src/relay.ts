/**
 * Talking to providers: credentials, timeouts, cancellation, and the stream guards that turn
 * an upstream that stops early into an `upstream_interrupted` event instead of a silent end.
 */
import type { ProviderConfig } from "./config.ts";
import type { Dialect } from "./endpoints.ts";
import { fromProviderError, GatewayError } from "./errors.ts";
import { pickHeaders, RETRY_HEADERS } from "./http.ts";

export const DEFAULT_ANTHROPIC_VERSION = "2023-06-01";

/** The client went away; nothing is left to answer. */
export class ClientGone extends Error {}

/** Upstream credentials in the header each API expects. The client's key never goes up. */
function credentialHeaders(provider: ProviderConfig): Record<string, string> {
  const key = provider.api_key ?? "";
  switch (provider.api) {
    case "chat":
    case "responses":
      return key ? { authorization: `Bearer ${key}` } : {};
    case "messages":
      return key ? { "x-api-key": key } : {};
    case "generate-content":
      return key ? { "x-goog-api-key": key } : {};
    case "demo":
      return {};
  }
}

export interface UpstreamRequest {
  provider: ProviderConfig;
  /** Appended to the provider's base_url. */
  path: string;
  body: string;
  /** Allow-listed client headers to forward. */
  forward?: Headers;
  /** The client's request signal: its disconnect aborts the upstream call. */
  signal: AbortSignal;
}

export interface UpstreamResponse {
  res: Response;
  /** Aborts the upstream request (used when the client disconnects or a timer fires). */
  abort: (reason?: unknown) => void;
  /** Stops watching the client's signal, once the body is done with. */
  release: () => void;
}

export function upstreamUrl(provider: ProviderConfig, path: string): string {
  return provider.base_url!.replace(/\/+$/, "") + path;
}

function timeoutError(what: string, ms: number): GatewayError {
  return new GatewayError(504, "timeout", `upstream ${what} within ${ms} ms`);
}

/**
 * Sends a request upstream and waits for its response headers, at most `first_byte_ms`
 * (Deno's fetch exposes no separate connect phase; a refused connection fails at once).
 */
export async function callUpstream(r: UpstreamRequest): Promise<UpstreamResponse> {
  if (r.signal.aborted) throw new ClientGone();
  const headersMs = r.provider.timeouts.first_byte_ms;
  const ctrl = new AbortController();
  const abort = (reason?: unknown) => ctrl.abort(reason);
  const onClientAbort = () => abort(new ClientGone());
  r.signal.addEventListener("abort", onClientAbort, { once: true });
  const release = () => r.signal.removeEventListener("abort", onClientAbort);
  const timer = setTimeout(
    () => abort(timeoutError("sent no response headers", headersMs)),
    headersMs,
  );
  const headers = new Headers(r.forward);
  headers.set("content-type", "application/json");
  for (const [k, v] of Object.entries(credentialHeaders(r.provider))) headers.set(k, v);
  if (r.provider.api === "messages" && !headers.has("anthropic-version")) {
    headers.set("anthropic-version", DEFAULT_ANTHROPIC_VERSION);
  }
  try {
    const res = await fetch(upstreamUrl(r.provider, r.path), {
      method: "POST",
      headers,
      body: r.body,
      signal: ctrl.signal,
    });
    return { res, abort, release };
  } catch (e) {
    release();
    const reason = ctrl.signal.reason;
    if (reason instanceof ClientGone || reason instanceof GatewayError) throw reason;
    throw new GatewayError(502, "upstream", `upstream ${r.provider.name} unreachable: ${e}`);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads an upstream error response and re-wraps it as a GatewayError (status kept). */
export async function upstreamError(up: UpstreamResponse): Promise<GatewayError> {
  const text = await up.res.text().catch(() => "");
  up.release();
  return fromProviderError(up.res.status, text, pickHeaders(up.res.headers, RETRY_HEADERS));
}

/**
 * The upstream body with first-byte and idle timeouts; pulling it respects backpressure, and
 * cancelling it (client gone) aborts the upstream request.
 */
export function guardBody(
  up: UpstreamResponse,
  timeouts: { first_byte_ms: number; idle_ms: number },
  stream: boolean,
): ReadableStream<Uint8Array> {
  const reader = up.res.body!.getReader();
  // For non-streaming responses the first-byte timeout already covered the headers.
  let waitMs = stream ? timeouts.first_byte_ms : timeouts.idle_ms;
  let what = stream ? "sent no data" : "went idle";
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timeoutError(what, waitMs)), waitMs);
      });
      try {
        const { done, value } = await Promise.race([reader.read(), timedOut]);
        if (done) {
          up.release();
          return controller.close();
        }
        controller.enqueue(value);
        waitMs = timeouts.idle_ms;
        what = "went idle";
      } catch (e) {
        up.abort(e);
        up.release();
        reader.cancel().catch(() => {});
        controller.error(e);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel(reason) {
      up.abort(new ClientGone(String(reason)));
      up.release();
      return reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}

/** The JSON of the event that tells a client its stream was cut, shaped so SDKs raise it. */
export function interruptionEvent(dialect: Dialect, message: string): string {
  const error = {
    type: "upstream_interrupted",
    message,
    // js-genai raises an in-stream error only when it carries an HTTP-like `code`.
    ...(dialect === "google" && { code: 502, status: "UNAVAILABLE" }),
  };
  const data = JSON.stringify({ type: "upstream_interrupted", error });
  // The Anthropic SDK ignores records without an event name; `error` makes it throw.
  return dialect === "anthropic" ? `event: error\ndata: ${data}\n\n` : `data: ${data}\n\n`;
}

/** How a client stream ends, in its framing. `sent`: whether any bytes went out before. */
export interface StreamEnd {
  /** Text after a complete stream. */
  complete(sent: boolean): string;
  /** Text that tells the client the upstream stopped before its end marker. */
  interrupted(sent: boolean, why: string): string;
}

/** SSE framing: the interruption event, then `data: [DONE]`. */
export function sseEnd(dialect: Dialect): StreamEnd {
  return {
    complete: () => "",
    interrupted: (_, why) => interruptionEvent(dialect, why) + "data: [DONE]\n\n",
  };
}

const encoder = new TextEncoder();

/**
 * Relays an encoded client stream and ends it in its framing: normally, or — if the upstream
 * stopped before its end marker (it closed, failed or timed out) — with the interruption.
 */
export function withInterruption(
  source: ReadableStream<Uint8Array>,
  ended: () => boolean,
  end: StreamEnd,
  onInterrupted: () => void,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let sent = false;
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>, why?: string) => {
    const text = why === undefined ? end.complete(sent) : end.interrupted(sent, why);
    if (text) controller.enqueue(encoder.encode(text));
    controller.close();
    if (why !== undefined) onInterrupted();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (!done) {
          sent = true;
          return controller.enqueue(value);
        }
        finish(controller, ended() ? undefined : "the upstream closed the stream before its end");
      } catch (e) {
        if (e instanceof ClientGone) return controller.error(e);
        // A failure after the end marker (e.g. a reset after [DONE]) lost nothing.
        if (ended()) return finish(controller);
        finish(controller, e instanceof GatewayError ? e.message : `upstream stream failed: ${e}`);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

/**
 * Passes bytes through untouched while looking for any of the format's end markers, without
 * parsing events. A small tail is kept so a marker split across chunks is still found.
 */
export function watchEndMarker(markers: readonly string[]): {
  stream: TransformStream<Uint8Array, Uint8Array>;
  ended: () => boolean;
} {
  const decoder = new TextDecoder();
  const keep = Math.max(...markers.map((m) => m.length));
  let tail = "";
  let seen = false;
  const stream = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      if (!seen) {
        const text = tail + decoder.decode(chunk, { stream: true });
        seen = markers.some((m) => text.includes(m));
        tail = text.slice(-keep);
      }
      controller.enqueue(chunk);
    },
  });
  return { stream, ended: () => seen };
}
