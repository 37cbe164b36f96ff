/**
 * The contract between the core and a format plugin. A plugin declares everything about its
 * wire format — endpoints, where its clients put keys, its error envelope, how an upstream
 * request is credentialed or signed, its stream framing, usage and end markers (through its
 * codec) — and `main.ts` hands the plugins to the core (`createGateway`). Nothing in
 * `src/kit/` imports the rest of `src/`, and nothing in `src/` imports `plugins/`; the
 * vendor traces left in the core are listed in docs/design.md#format-plugins.
 */
import type { Codec } from "./codec.ts";
import type { GatewayError, ProviderErrors } from "./errors.ts";
import type { UpstreamFraming } from "./framing.ts";

/** One of the gateway's own limit windows, as rate-limit headers report it. */
export interface RateLimitWindow {
  limit: number;
  remaining: number;
  /** When it frees (ms since the epoch). */
  reset: number;
}

/** The windows rate-limit headers describe: requests, and tokens (per minute, else per day). */
export interface RateLimitState {
  requests?: RateLimitWindow;
  tokens?: RateLimitWindow;
}

/** How a format's clients authenticate and hear about errors. */
export interface Dialect {
  /** Names the dialect in logs and metric labels (`openai`). */
  readonly id: string;
  /**
   * The key a client presented, where this dialect's SDKs put it. May throw a 400 (a key in
   * the URL is refused, not read).
   */
  presentedKey(req: Request, url: URL): string | undefined;
  /** Where the key may go (`x-api-key: <key>`), named in the 401 of a request without one. */
  readonly keyLocations: readonly string[];
  /** The JSON error body of this dialect. */
  errorBody(err: GatewayError, requestId?: string): unknown;
  /**
   * A relayed provider's own JSON error (its wire format's envelope) reaches these clients as
   * the provider wrote it, as the cloud they call passes it through (Vertex AI relays Claude's
   * errors in Anthropic's envelope). Default: only clients of the wire format's own dialect get
   * it; others hear the error in their dialect.
   */
  passesWireErrors?: boolean;
  /** The HTTP status this dialect's SDKs must see for `status` (default: the same). */
  status?(status: number): number;
  /**
   * The whole ending of a client stream that was cut, in the client's stream framing (an SSE
   * event for SSE formats, shaped so its SDKs raise it, and any end marker the dialect needs
   * after it): the core adds nothing.
   */
  interruption(message: string): string;
  /** The gateway's own limits as the headers this dialect's clients read (none by default). */
  rateLimitHeaders?(state: RateLimitState, now: number): [string, string][];
}

/**
 * Answers one request. `C` is the per-request context the core hands its handlers; the contract
 * does not know its shape, so it imports nothing from the core.
 */
export type Handler<C> = (ctx: C) => Promise<Response>;

/** One path a format serves. */
export interface EndpointSpec<C> {
  /** Unique among all endpoints; names the endpoint in logs and metrics. */
  name: string;
  method: "GET" | "POST" | "DELETE";
  /** Matches the path (query string excluded). */
  pattern: RegExp;
  /** A concrete path that matches, for docs and tests (kong.yml must route it). */
  example: string;
  handler: Handler<C>;
  /** Served on a WebSocket upgrade only; a plain GET gets a 426. */
  upgrade?: boolean;
  /** Infrastructure (health): not routed through Kong, needs no key. */
  internal?: boolean;
  /** Routed through Kong but answered without a key (`GET /`, which reveals nothing). */
  keyless?: boolean;
  /** `gen_ai.operation.name` of a generation endpoint (`chat`); absent: not a GenAI call. */
  operation?: string;
  /** Its tokens are not billed (compaction, token counting). */
  unbilled?: boolean;
}

/** A request on its way upstream, complete, for credentials or a signature over all of it. */
export interface OutgoingRequest {
  method: string;
  url: URL;
  headers: Headers;
  /** The exact body that will be sent ("" for a WebSocket dial). */
  body: string;
}

/**
 * What a format needs from the core's upstream calls (HTTP and WebSocket alike), and how its
 * providers' errors read (`statusKinds`, `readError`).
 */
export interface UpstreamSpec extends ProviderErrors {
  /**
   * Puts the provider key on a request: a header, or a signature computed over method, URL,
   * headers and body. `key` is undefined for a provider configured without one.
   */
  authorize(req: OutgoingRequest, key: string | undefined): void | Promise<void>;
  /**
   * How this format's response streams divide into events, and their content type (default:
   * server-sent events). `interruption` ends a relayed stream that is cut short.
   */
  framing?(interruption?: (why: string) => string): UpstreamFraming;
  /** Client headers forwarded on relayed calls (never credentials); `x-foo-` is a prefix. */
  forwardHeaders?: readonly string[];
  /** Provider response headers relayed to clients (request ids, rate limits). */
  responseHeaders?: readonly string[];
  /** Why a model name cannot be sent to this format's providers (e.g. it goes in a URL). */
  unsafeModel?(model: string): string | undefined;
  /** The providers' own model list, read for the gateway's lists (src/request/provider_models.ts). */
  models?: ProviderModelList;
}

/** A provider's model list endpoint (`GET /v1/models`), read page by page. */
interface ProviderModelList {
  /** Appended to the provider's `base_url`: the first page, its query included. */
  path: string;
  /** A page's model ids, and the query parameters of the next page when there is one. */
  page(body: Record<string, unknown>): { ids: string[]; next?: Record<string, string> };
}

/** The model list in this format's shape. The core supplies the models; the plugin the shape. */
export interface ModelListing {
  /** The list's path (`/v1/models`); one model is at `${path}/{id}`. */
  path: string;
  /**
   * The list endpoint's name in logs and metrics (default: `models` for the first path,
   * `<id>_models` for others); its one-model endpoint drops the `s`.
   */
  name?: string;
  /** On a path several formats list at: whether the caller is this format's client. */
  claims?(req: Request): boolean;
  /** The list, paged as the format pages (query parameters in `url`). */
  list?(models: ListedModel[], url: URL): unknown;
  /**
   * Instead of `list`, where the interface has this format's clients list models: the list path
   * refuses with a 404 that names it (one model at `${path}/{id}` is still answered).
   */
  listedAt?: string;
  one(model: ListedModel): unknown;
}

/** The vendor the built-in default config wires up when its key is in the environment. */
export interface DefaultVendor {
  /** The environment prefix: `<env>_API_KEY`, `<env>_BASE_URL`. */
  env: string;
  name: string;
  base_url: string;
  models: readonly string[];
  /** The default route relays as is (`passthrough: true`). */
  passthrough?: boolean;
}

export interface FormatPlugin<C> {
  /** The `api:` that providers of this format are configured with. */
  id: string;
  /** Who can read this format's signatures and encrypted reasoning (formats may share one). */
  family: string;
  /** OpenTelemetry `gen_ai.system` of this format's providers. */
  system: string;
  codec: Codec;
  /**
   * How its clients authenticate and hear about errors. Absent: a format only providers speak
   * (Bedrock Converse), which has no paths, endpoints or model list, and whose codec's ingress
   * half and `watch` are never called.
   */
  dialect?: Dialect;
  /** Path prefixes in this dialect, matched or not (an unknown path's 404 speaks it). */
  paths: readonly string[];
  endpoints: readonly EndpointSpec<C>[];
  /**
   * How its providers are called. Absent: a format only clients speak — another format's wire
   * at other addresses and in another dialect (Vertex AI's rawPredict carries Anthropic's
   * Messages): no provider is configured with its id; its requests are relayed to providers of
   * the wire its codec names (`codec.api`) and converted for the others, and its `family` and
   * `system` are that wire's.
   */
  upstream?: UpstreamSpec;
  models?: ModelListing;
  defaultVendor?: DefaultVendor;
  /** Routes to this format's providers may set `passthrough: true`. */
  passthroughRoutes?: boolean;
}

/** A model as the model lists show it; each dialect renders it in its own shape. */
export interface ListedModel {
  id: string;
  owned_by: string;
  display_name?: string;
  context_window?: number;
  max_output_tokens?: number;
}
