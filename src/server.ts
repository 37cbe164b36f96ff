/**
 * The HTTP front: request ids, endpoint dispatch, authentication, errors in the caller's
 * dialect, and one access-log line per request.
 */
import { authenticate, authenticateSigned } from "./request/auth.ts";
import {
  checkFormats,
  type Config,
  providerKeys,
  type ResponseStoreConfig,
} from "./config/config.ts";
import type { Gateway, Plugin, RequestContext } from "./request/context.ts";
import type { FormatRegistry } from "./request/registry.ts";
import { type Endpoint, Formats } from "./request/formats.ts";
import { GatewayError, notFound } from "./kit/errors.ts";
import { type HeaderPairs, pairsOf } from "./kit/http.ts";
import { errorResponse } from "./request/error_response.ts";
import { accessLog } from "./ops/log.ts";
import { Metrics } from "./ops/metrics.ts";
import { dropSpanQuery, otelEnabled, spanAttributes } from "./ops/otel.ts";
import { Stopping } from "./request/relay.ts";
import { clientClosed, ClientGone } from "./request/stream_end.ts";
import { ProviderModels } from "./request/provider_models.ts";
import { type ConversationStore, MemoryStore } from "./state/store.ts";
import { Secrets } from "./ops/secrets.ts";
import { Trace } from "./ops/trace.ts";
import { configured } from "./reload.ts";
import { Limiter } from "./state/limits/limiter.ts";
import { Pins, type PinStore } from "./request/pins.ts";
import { RequestCall } from "./request/request_call.ts";
import {
  AGENT_HEADER,
  agentOf,
  kongConsumer,
  SESSION_HEADERS,
  sessionOf,
} from "./state/limits/identity.ts";
import type { Identity } from "./state/limits/policy.ts";
import { type LimitStore, MemoryLimitStore } from "./state/limits/store.ts";
import { inRedis } from "./config/redis_url.ts";

/** Incoming request-id headers, in order of preference (Kong's first). */
const REQUEST_ID_HEADERS = ["x-kong-request-id", "x-request-id", "x-correlation-id"];
const REQUEST_ID_RESPONSE_HEADER = "x-gateway-request-id";

/** A gateway serving `plugins`' formats (main.ts passes plugins/mod.ts's). */
export async function createGateway(
  config: Config,
  plugins: readonly Plugin[] | Formats,
  /**
   * `builtInConfig`: the config is the built-in default (its 404 hints name vendor keys);
   * `limitStore`: where limits count instead of `config.limits_store`'s (tests shorten windows;
   * a gateway thread of `workers` counts in its supervisor's); `conversationStore`: where
   * answers are kept instead of `config.response_store`'s (likewise); `pins`: where
   * continuations' accounts are kept (a gateway thread's, in its supervisor).
   */
  opts: {
    builtInConfig?: boolean;
    limitStore?: LimitStore;
    conversationStore?: ConversationStore;
    pins?: PinStore;
  } = {},
): Promise<Gateway> {
  const formats = plugins instanceof Formats ? plugins : new Formats(plugins);
  checkFormats(config, formats);
  const secrets = new Secrets(providerKeys(config));
  const systems = {
    ...Object.fromEntries(formats.providerFormats.map((p) => [p.id, p.system])),
    // A provider on a platform is named by it (`aws.bedrock`), whatever its wire format.
    ...formats.platforms.systems,
  };
  const metrics = new Metrics({ maxLabelValues: config.metrics?.max_label_values, systems });
  const live = { current: undefined! as Gateway };
  const storeCfg = config.limits_store;
  // Loaded only where limits count in Redis: its client is the largest module the gateway has
  // (~4.5 MB of heap), and a larger resident heap costs every request (docs/performance.md).
  const redisLimits = !opts.limitStore && inRedis(storeCfg)
    ? (await import("./state/limits/redis.ts")).RedisLimitStore
    : undefined;
  const limiter = new Limiter(
    (onError) =>
      opts.limitStore ??
        (redisLimits ? redisLimits.connect(storeCfg, onError) : new MemoryLimitStore()),
    storeCfg,
    metrics,
    () => live.current.policy,
  );
  const gw: Gateway = {
    ...configured(config, undefined, opts.builtInConfig ? formats.vendors : []),
    formats,
    store: opts.conversationStore ?? await createStore(config.response_store),
    secrets,
    observers: [
      accessLog(secrets),
      limiter,
      // Metrics no listener exposes are not collected either (docs/performance.md).
      ...config.metrics ? [metrics] : [],
      ...otelEnabled() ? [spanAttributes(systems)] : [],
    ],
    metrics,
    limiter,
    pins: opts.pins ?? new Pins(),
    draining: false,
    stopping: new Stopping(),
    closingSockets: new AbortController(),
    providerModels: undefined!,
    live,
  };
  gw.live.current = gw;
  gw.providerModels = new ProviderModels(gw.live);
  return gw;
}

/**
 * The request headers the front reads, by name, from the request's headers read once (a `get`
 * of a header the request lacks scans all of them, and the front asks for about ten that most
 * requests lack).
 */
const FRONT_HEADERS = new Set<string>([
  ...REQUEST_ID_HEADERS,
  "x-forwarded-for",
  "upgrade",
  ...SESSION_HEADERS,
  AGENT_HEADER,
]);

type FrontHeaders = Record<string, string | undefined>;

function frontHeaders(headers: HeaderPairs): FrontHeaders {
  const out: FrontHeaders = {};
  for (const [name, value] of headers) {
    if (FRONT_HEADERS.has(name)) out[name] = value;
  }
  return out;
}

function requestIdOf(front: FrontHeaders): string {
  for (const h of REQUEST_ID_HEADERS) {
    const v = front[h];
    if (v && /^[\w.:@/+=-]{1,128}$/.test(v)) return v;
  }
  return crypto.randomUUID();
}

function findEndpoint(
  formats: FormatRegistry<RequestContext>,
  req: Request,
  path: string,
  front: FrontHeaders,
): Endpoint {
  const matches = formats.matching(path);
  if (matches.length === 0) throw notFound(`no such endpoint: ${req.method} ${path}`);
  // A WebSocket endpoint answers upgrades only; another on its path the plain requests.
  const upgrade = front.upgrade?.toLowerCase() === "websocket";
  // HEAD is GET without the body (Deno's server leaves the body out).
  const method = req.method === "HEAD" ? "GET" : req.method;
  const wanted = matches.find((e) => e.method === method && (e.upgrade === true) === upgrade);
  if (wanted) return wanted;
  if (matches.some((e) => e.upgrade && e.method === method)) {
    throw new GatewayError(
      426,
      "invalid_request",
      `${req.method} ${path} requires a WebSocket upgrade`,
    );
  }
  throw new GatewayError(
    405,
    "invalid_request",
    `method ${req.method} is not allowed on ${path} (use ${
      matches.map((e) => e.method).join("/")
    })`,
  );
}

function peerAddress(info?: Deno.ServeHandlerInfo): string | undefined {
  const addr = info?.remoteAddr;
  return addr && "hostname" in addr ? addr.hostname : undefined;
}

export function createHandler(
  root: Gateway,
): (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response> {
  return async (incoming, info) => {
    let req = incoming;
    // One snapshot for the whole request, whatever a reload does meanwhile.
    const gw = root.live.current;
    const url = new URL(req.url);
    dropSpanQuery(url);
    const headerPairs = pairsOf(req.headers);
    const front = frontHeaders(headerPairs);
    const header = (name: string) => front[name];
    const requestId = requestIdOf(front);
    // The dialect of the path's prefix, until an endpoint matches: then its own.
    let dialect = gw.formats.dialectOf(url.pathname);
    const trace = new Trace(gw.observers, {
      requestId,
      method: req.method,
      path: url.pathname,
      dialect: dialect.id,
      clientIp: gw.proxies.clientIp(peerAddress(info), front["x-forwarded-for"] ?? null),
    });
    let res: Response;
    let identity: Identity | undefined;
    try {
      const endpoint = findEndpoint(gw.formats, req, url.pathname, front);
      dialect = endpoint.dialect;
      trace.matched(endpoint, dialect.id);
      if (!endpoint.internal) {
        if (gw.draining) {
          throw new GatewayError(503, "overloaded", "the gateway is shutting down; retry");
        }
        if (!endpoint.keyless) {
          let who = identify(gw, endpoint.keyDialects, req, url, info);
          // A signed request: its body was read to check the signature, and rides on in `req`.
          if (who instanceof Promise) ({ identity: who, req } = await who);
          identity = who;
          trace.key = identity.name;
          trace.consumer = identity.consumer;
          trace.sessionId = sessionOf(header);
          trace.agentId = agentOf(header);
          // A WebSocket's responses are admitted one by one (the upgrade is not a request); an
          // identity without limits has nothing to admit, nor a turn of the event loop to wait.
          if (endpoint.operation && !endpoint.upgrade && identity.limits) {
            await gw.limiter.admit(trace, identity, dialect);
          }
        }
      }
      // A signed request's body rides in a request of its own: its headers are read again.
      const headers = req === incoming ? headerPairs : undefined;
      const ctx = new RequestCall(gw, req, url, requestId, dialect, identity, trace, headers);
      res = await endpoint.handler(ctx);
    } catch (e) {
      const err = e instanceof GatewayError
        ? e
        : e instanceof ClientGone
        ? clientClosed()
        : internalError(e, requestId);
      // Upstream text may ride in the message: no provider key leaves in it.
      err.message = gw.secrets.scrub(err.message);
      if (e instanceof ClientGone) trace.clientGone = true;
      trace.failed(err.kind, err.message);
      trace.streaming = false;
      res = errorResponse(dialect, err, requestId);
    }
    if (res.status !== 101) res.headers.set(REQUEST_ID_RESPONSE_HEADER, requestId);
    trace.status = res.status;
    // A streamed answer is ended by its stream stage, once the body is done.
    if (!trace.streaming) {
      trace.firstByte();
      trace.end(res.status);
    }
    if (identity?.limits && res.status !== 101) {
      await gw.limiter.answered(trace, dialect, res.headers);
    }
    return res;
  };
}

/**
 * A Kong consumer (if trusted and enabled), else the owner of the gateway key presented — or,
 * for a request signed with a key, a promise of it and of the request carrying the body read.
 */
function identify(
  gw: Gateway,
  dialects: Endpoint["keyDialects"],
  req: Request,
  url: URL,
  info?: Deno.ServeHandlerInfo,
): Identity | Promise<{ identity: Identity; req: Request }> {
  const consumer = gw.config.identities.kong_consumers
    ? kongConsumer(gw.proxies, peerAddress(info), req.headers)
    : undefined;
  if (consumer) return gw.policy.consumer(consumer);
  const signed = authenticateSigned(
    gw.keys,
    dialects,
    req,
    url,
    gw.config.request_body_timeout_ms,
  );
  if (signed) return signed.then(({ name, req }) => ({ identity: gw.policy.key(name), req }));
  return gw.policy.key(authenticate(gw.keys, dialects, req, url));
}

function internalError(e: unknown, requestId: string): GatewayError {
  console.error(JSON.stringify({ level: "error", request_id: requestId, error: String(e) }));
  return new GatewayError(500, "upstream", `internal gateway error (request id ${requestId})`);
}

/** The configured store: Redis when `redis_url` or `redis_cluster` is set, else the embedded one. */
async function createStore(cfg: ResponseStoreConfig): Promise<ConversationStore> {
  // Disabled, the store stays empty (nothing is put): no Redis connection either.
  if (!inRedis(cfg) || !cfg.enabled) return new MemoryStore(cfg);
  const { RedisStore } = await import("./state/store_redis.ts");
  return RedisStore.connect(cfg);
}
