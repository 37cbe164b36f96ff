/** What a request handler gets: the gateway's shared state and this request's own. */
import type { KeyStore } from "./auth.ts";
import type { Config } from "./config.ts";
import type { Dialect, EndpointName } from "./endpoints.ts";
import type { Usage } from "./ir.ts";
import type { Router } from "./router.ts";
import type { ResponseStore } from "./store.ts";
import type { Secrets } from "./secrets.ts";
import type { TrustedProxies } from "./trusted_proxies.ts";

/**
 * One snapshot of the gateway: a request takes the one in force when it arrives and keeps it to
 * its end, so a reload (src/reload.ts) never changes a request half-way.
 */
export interface Gateway {
  config: Config;
  router: Router;
  keys: KeyStore;
  /** Stored Responses (previous_response_id, GET /v1/responses/{id}). */
  store: ResponseStore;
  /**
   * Every provider credential, scrubbed from whatever upstream text leaves the gateway. Shared
   * by all snapshots and only ever grows, so keys replaced by a reload stay scrubbed.
   */
  secrets: Secrets;
  /** Peers whose X-Forwarded-For names the client (Kong). */
  proxies: TrustedProxies;
  /** Set on shutdown: /readyz turns 503 and new requests are refused. */
  draining: boolean;
  /** Aborted when the shutdown grace runs out: open streams end with the interruption. */
  stopping: AbortController;
  /**
   * Aborted just before the listener closes. Deno's server shutdown ends upgraded sockets at
   * once, so WebSockets end first on their own terms (interruption frame, close 1001).
   */
  closingSockets: AbortController;
  /** The snapshot in force now, shared by all snapshots; a reload replaces `current`. */
  live: { current: Gateway };
}

/** One access-log line. Never a key or a prompt. */
export interface AccessRecord {
  request_id: string;
  client_ip?: string;
  key?: string;
  method: string;
  endpoint: EndpointName | "unknown";
  path: string;
  model?: string;
  route?: string;
  provider?: string;
  passthrough?: boolean;
  status?: number;
  duration_ms?: number;
  ttfb_ms?: number;
  usage?: Usage;
  /** Request fields the upstream could not take and the gateway left out (never silently). */
  dropped?: string[];
  interrupted?: boolean;
  error?: string;
  /** Responses store outcome: `kept`, `too_large`, `taken`, `off` (store: false), `failed`. */
  stored?: string;
}

export interface RequestContext {
  gw: Gateway;
  req: Request;
  url: URL;
  requestId: string;
  dialect: Dialect;
  /** Filled in by handlers as they learn the model, route and usage. */
  record: AccessRecord;
}

export type Handler = (ctx: RequestContext) => Promise<Response>;
