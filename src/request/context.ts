/** What a request handler gets: the gateway's shared state and this request's own. */
import type { KeyStore } from "./auth.ts";
import type { Config, ProviderConfig } from "../config/config.ts";
import type { Dialect, FormatPlugin, Handler as HandlerOf } from "../kit/format.ts";
import type { HandlerContext } from "../kit/handler.ts";
import type { HeaderPairs } from "../kit/http.ts";
import type { FormatRegistry } from "./registry.ts";
import type { Limiter } from "../state/limits/limiter.ts";
import type { PinStore } from "./pins.ts";
import type { Identity, LimitPolicy } from "../state/limits/policy.ts";
import type { Metrics } from "../ops/metrics.ts";
import type { Stopping } from "./relay.ts";
import type { Resolved, Router } from "./router.ts";
import type { ConversationStore } from "../state/store.ts";
import type { Secrets } from "../ops/secrets.ts";
import type { Observer, Trace } from "../ops/trace.ts";
import type { TrustedProxies } from "../config/trusted_proxies.ts";

/**
 * One snapshot of the gateway: a request takes the one in force when it arrives and keeps it to
 * its end, so a reload (src/reload.ts) never changes a request half-way.
 */
export interface Gateway {
  config: Config;
  /** The format plugins main.ts handed over: endpoints, dialects, codecs, upstream rules. */
  formats: FormatRegistry<RequestContext>;
  router: Router;
  keys: KeyStore;
  /** Identities' limits, admins and prices of this snapshot's config. */
  policy: LimitPolicy;
  /** Counts and enforces limits; one for the gateway's life (counts survive reloads). */
  limiter: Limiter;
  /** Requests that must reach one provider account (continuations); for the gateway's life. */
  pins: PinStore;
  /** The models each provider reports, read in the background; shared by all snapshots. */
  providerModels: ReportedModels;
  /** Stored conversations, of every format that keeps them (src/request/conversations.ts). */
  store: ConversationStore;
  /**
   * Every provider credential, scrubbed from whatever upstream text leaves the gateway. Shared
   * by all snapshots and only ever grows, so keys replaced by a reload stay scrubbed.
   */
  secrets: Secrets;
  /** Peers whose X-Forwarded-For names the client (Kong). */
  proxies: TrustedProxies;
  /** Told every request's lifecycle (the access log first, then metrics if `config.metrics`). */
  observers: Observer[];
  /** What `GET /metrics` exposes; collected only when `config.metrics` turns the listener on. */
  metrics: Metrics;
  /** Set on shutdown: /readyz turns 503 and new requests are refused. */
  draining: boolean;
  /** Stops when the shutdown grace runs out: open streams end with the interruption. */
  stopping: Stopping;
  /**
   * Aborted just before the listener closes. Deno's server shutdown ends upgraded sockets at
   * once, so WebSockets end first on their own terms (interruption frame, close 1001).
   */
  closingSockets: AbortController;
  /** The snapshot in force now, shared by all snapshots; a reload replaces `current`. */
  live: { current: Gateway };
}

/**
 * The models providers report on their own list endpoints (src/request/provider_models.ts), for the
 * model lists. Declared here so that the snapshot does not import the reader.
 */
export interface ReportedModels {
  /** What `provider` reported last; undefined until a read succeeded. */
  ids(provider: ProviderConfig): readonly string[] | undefined;
  /** Reads every provider's list now, then periodically, until `stop`. */
  start(): void;
  /** Reads every list now (resolves once done; failures keep the last good lists). */
  refresh(): Promise<void>;
  /** The providers may have changed: read again, if reading at all. */
  reloaded(): void;
  stop(): Promise<void>;
}

/**
 * One request as the core sees it: what a plugin's handler may use (`HandlerContext`, the
 * contract's) and the gateway snapshot the core's own modules work with.
 */
export interface RequestContext extends HandlerContext {
  readonly gw: Gateway;
  /** Every header of `req`, read once (`pairsOf`: each read of Deno's `Headers` is dear). */
  readonly headerPairs: HeaderPairs;
  readonly dialect: Dialect;
  /** Who made the request (absent on endpoints that need no key). */
  readonly identity?: Identity;
  /** This request's lifecycle, told to the observers (access log, metrics). */
  readonly trace: Trace;
  /** The route, as the core's modules read it. */
  route(model: string): Resolved;
  /** The same client's next request on a long-lived connection (a WebSocket frame). */
  next(changes: Pick<RequestContext, "gw" | "req" | "trace" | "requestId">): RequestContext;
}

export type Handler = HandlerOf<RequestContext>;

/** A format plugin whose handlers take this core's request context. */
export type Plugin = FormatPlugin<RequestContext>;
