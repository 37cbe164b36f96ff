/**
 * The core's request context: a request's own state, and what its handler may ask of the core
 * (the contract's `HandlerContext`) answered by the core's modules.
 */
import type { EmbeddingSpec, GenerationSpec, JsonBody, OtherEndpoint } from "../kit/generation.ts";
import { type HeaderPairs, pairsOf, readJsonBody } from "../kit/http.ts";
import type * as ir from "../kit/ir.ts";
import type { Dialect } from "../kit/format.ts";
import type { Gateway, RequestContext } from "./context.ts";
import { answerLocally, localId, localSource } from "./answer.ts";
import type { IrSource } from "../kit/codec.ts";
import type { Conversations } from "../kit/conversations.ts";
import type { HandlerContext } from "../kit/handler.ts";
import type { SocketWire } from "../kit/socket.ts";
import { RequestConversations } from "./conversations.ts";
import { embed } from "./embeddings.ts";
import { convertedEvents, generate, relayed, route } from "./generation.ts";
import type { Identity } from "../state/limits/policy.ts";
import { type Resolved, resolvedOf } from "./router.ts";
import type { Route } from "../kit/route.ts";
import { openSocketSession } from "./socket_session.ts";
import type { Trace } from "../ops/trace.ts";

export class RequestCall implements RequestContext {
  #conversations?: Conversations;

  constructor(
    readonly gw: Gateway,
    readonly req: Request,
    readonly url: URL,
    readonly requestId: string,
    readonly dialect: Dialect,
    readonly identity: Identity | undefined,
    readonly trace: Trace,
    /** `req`'s headers, where the front read them already. */
    readonly headerPairs: HeaderPairs = pairsOf(req.headers),
  ) {}

  get conversations(): Conversations {
    return this.#conversations ??= new RequestConversations(this);
  }

  jsonBody(): Promise<JsonBody> {
    return readJsonBody(this.req, this.headerPairs, this.gw.config.request_body_timeout_ms);
  }

  route(model: string): Resolved {
    return route(this, model);
  }

  generate(spec: GenerationSpec, r?: Route): Promise<Response> {
    return generate(this, spec, r && resolvedOf(r));
  }

  embed(spec: EmbeddingSpec): Promise<Response> {
    return embed(this, spec);
  }

  relay(other: OtherEndpoint, r: Route): Promise<Response> {
    return relayed(this, other, resolvedOf(r));
  }

  events(req: ir.Request, r: Route): Promise<IrSource> {
    return convertedEvents(this, resolvedOf(r), req);
  }

  localEvents(res: ir.Response): IrSource {
    this.trace.routed("local");
    return localSource(res);
  }

  answer(spec: GenerationSpec, res: ir.Response): Response {
    return answerLocally(this, spec, res);
  }

  localId(): { id: string; now: number } {
    return localId(this);
  }

  socket<F>(wire: SocketWire<F, HandlerContext>): Response {
    return openSocketSession(this, wire);
  }

  next(changes: Pick<RequestContext, "gw" | "req" | "trace" | "requestId">): RequestContext {
    const { gw, req, trace, requestId } = changes;
    const headers = req === this.req ? this.headerPairs : undefined;
    return new RequestCall(
      gw,
      req,
      this.url,
      requestId,
      this.dialect,
      this.identity,
      trace,
      headers,
    );
  }
}
