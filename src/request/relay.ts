/**
 * Talking to providers: the call (URL, credential, forwarded headers, deadline, cancellation,
 * the answer's media type), the provider socket, the gateway's shutdown of open calls. Reading
 * the answer lives in src/request/upstream_body.ts; how a client's stream ends, in src/request/stream_end.ts.
 */
import type { ProviderConfig } from "../config/config.ts";
import { GatewayError } from "../kit/errors.ts";
import type { OutgoingRequest, UpstreamSpec } from "../kit/format.ts";
import { headersFrom, JSON_TYPE, unexpectedContentType } from "./headers.ts";
import { type HeaderPairs, pairsOf } from "../kit/http.ts";
import { ClientGone } from "./stream_end.ts";
import { Deadline } from "./deadline.ts";
import type { AnyPlatform } from "../kit/platform.ts";
import type { UpstreamFraming } from "../kit/framing.ts";
import {
  credentialScrub,
  platformAnswer,
  platformFraming,
  type PlatformRequest,
  sendThrough,
} from "./platforms.ts";

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
  /** A streaming call's framing in the provider's format; none: the answer is one JSON body. */
  framing?: UpstreamFraming;
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
  /** A stream's framing, the platform's around the format's; a JSON answer has none. */
  framing?: UpstreamFraming;
  /** A JSON answer in the format's shape, where the platform's operation answers in its own. */
  reshape?: (json: Record<string, unknown>) => Record<string, unknown> | undefined;
  /**
   * What the call's credential scrubs beyond the registered secrets (a SigV4 signature) from
   * the texts it may be quoted in: an error answer, a stream's exception, stream text that
   * quotes a registered secret.
   */
  scrubCredential?: (text: string) => string;
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
 * (Deno's fetch exposes no separate connect phase; a refused connection fails at once). A
 * success must be in the media type asked for (JSON, or the stream's framing's).
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
  // Takes the request as an argument: a closure over `out` would keep its body alive as long
  // as `abort` and `release` (the whole stream), which share this function's context.
  const send = (o: OutgoingRequest) =>
    fetch(o.url, {
      method: o.method,
      // Pairs: Deno converts a `Headers` init by generic iteration, dearer than its pairs.
      headers: pairsOf(o.headers),
      body: o.body,
      signal: ctrl.signal,
      client,
    });
  let res: Response;
  try {
    if (r.platform) res = await sendThrough(r.platform, out, r.key, ctrl.signal, send);
    else {
      // Most formats sign synchronously: no await (a turn of the microtask queue) for them.
      const signing = r.spec.authorize(out, r.key);
      if (signing) await signing;
      res = await send(out);
    }
  } catch (e) {
    release();
    const reason = ctrl.signal.reason;
    if (reason instanceof ClientGone || reason instanceof GatewayError) throw reason;
    // A platform's own refusal (a call it cannot address).
    if (e instanceof GatewayError) throw e;
    // Deno's message names the URL, not the key; it is scrubbed on the way out all the same.
    throw new GatewayError(502, "upstream", `upstream ${r.provider.name} unreachable: ${e}`);
  }
  const platform = r.platform?.binding.platform;
  const framing = r.framing && platformFraming(r.platform, r.framing);
  const reshape = platformAnswer(r.platform);
  const scrubCredential = credentialScrub(r.platform, out);
  const up = {
    res,
    provider: r.provider.name,
    deadline,
    abort,
    release,
    platform,
    framing,
    reshape,
    scrubCredential,
  };
  const mediaType = framing?.mediaType ?? JSON_TYPE;
  const wrongType = res.ok ? unexpectedContentType(res.headers, mediaType) : undefined;
  if (wrongType !== undefined) {
    // A 2xx of the wrong content type (an HTML login page, a proxy's text) is not success: the
    // caller answers 502 instead of relaying garbage.
    abort();
    release();
    throw new GatewayError(
      502,
      "upstream",
      `upstream ${r.provider.name} answered ${res.status} with content type ` +
        `${JSON.stringify(wrongType.slice(0, 100) || "(none)")}, not ${mediaType}`,
    );
  }
  return up;
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
