/**
 * What a format plugin's handler may ask of the core for one request: the request itself, the
 * route a model resolves to, and the core's runs (a generation, another endpoint relayed, an
 * answer made here). The core's request context implements it; a handler that needs nothing
 * else of the core is typed `Handler<HandlerContext>` and imports nothing from the core.
 */
import type { IrSource } from "./codec.ts";
import type { Conversations } from "./conversations.ts";
import type { Handler } from "./format.ts";
import type { EmbeddingSpec, GenerationSpec, JsonBody, OtherEndpoint } from "./generation.ts";
import type * as ir from "./ir.ts";
import type { Route } from "./route.ts";
import type { SocketWire } from "./socket.ts";

export type { Route } from "./route.ts";

export interface HandlerContext {
  readonly req: Request;
  readonly url: URL;
  readonly requestId: string;
  /** What this request's access-log line says of the stored-response outcome. */
  readonly trace: { stored?: string };
  /**
   * The request's JSON object body, read within the configured deadline
   * (`request_body_timeout_ms`) and bounded (src/kit/http.ts `readJsonBody`).
   */
  jsonBody(): Promise<JsonBody>;
  /** The stored conversations, as this request's client key. */
  readonly conversations: Conversations;
  /** Resolves `model` to its route (once per request: pass it on to `generate`/`relay`). */
  route(model: string): Route;
  /**
   * Runs an embeddings request: routes the model, tries the route's targets, each relayed or
   * converted (its inputs split into the calls the target's wire takes), and answers with
   * the spec's answer.
   */
  embed(spec: EmbeddingSpec): Promise<Response>;
  // The members that take a route back are properties, not methods: the type checker then holds
  // an implementation to taking any `Route` (a method could narrow it to its own type unchecked).
  /**
   * Runs a generation: routes the model (unless `route` is given), tries the route's targets,
   * each relayed or converted, and answers in the spec's format.
   */
  generate: (spec: GenerationSpec, route?: Route) => Promise<Response>;
  /** Relays a non-generation endpoint of the client's API to the route's providers of it. */
  relay: (other: OtherEndpoint, route: Route) => Promise<Response>;
  /**
   * A converted stream's IR events for a client that encodes them itself (the Responses
   * WebSocket), failing over like `generate` until the stream's content starts.
   */
  events: (req: ir.Request, route: Route) => Promise<IrSource>;
  /** A response made here (no output parts) as a stream's IR events, for such a client. */
  localEvents(res: ir.Response): IrSource;
  /** Answers with a response made here, without a provider call (JSON or a stream). */
  answer(spec: GenerationSpec, res: ir.Response): Response;
  /** An id and a creation time (seconds) for a response made here. */
  localId(): { id: string; now: number };
  /**
   * Upgrades the request to a WebSocket whose session the core runs, each frame read and run
   * by `wire` as a request of its own (src/kit/socket.ts).
   */
  socket<F>(wire: SocketWire<F, HandlerContext>): Response;
}

/** A handler that needs only what the contract offers. */
export type PluginHandler = Handler<HandlerContext>;
