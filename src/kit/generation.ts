/**
 * What a generation endpoint declares, for the core to run: the request, how it may reach
 * providers and how the client is answered. The core owns the sequence (src/request/generation.ts).
 */
import type { ClientContext, Codec } from "./codec.ts";
import type { UpstreamFraming } from "./framing.ts";
import type { Operation } from "./platform.ts";
import type { ReadUsage } from "./usage.ts";

/** A request body as received. */
export interface JsonBody {
  json: Record<string, unknown>;
  /** The exact text received, relayed untouched on passthrough routes. */
  raw: string;
}

/**
 * How a generation reaches providers. `auto`: relayed as is to providers of the client's
 * format, converted through the IR for the others. `convert`: through the IR everywhere (the
 * answer is built here). `{ relayOnly }`: relayed, to providers of the client's format only;
 * `relayOnly` says why (state only they keep, such as a previous response id).
 */
export type Via = "auto" | "convert" | { relayOnly: string };

/** A client stream's framing when it is not server-sent events (a relayed upstream's alike). */
export interface StreamFraming {
  /** The content type of a converted stream sent in it. */
  contentType: string;
  /** A framing for one response (framings keep state). */
  open(): UpstreamFraming;
}

export interface GenerationSpec {
  ingress: Codec;
  body: JsonBody;
  model: string;
  stream: boolean;
  /** Default: `auto`. */
  via?: Via;
  /** A relayed request's upstream path when it is not `ingress.path()` (another framing). */
  relayPath?(upstreamModel: string): string;
  /** Default: server-sent events. */
  framing?: StreamFraming;
  /** Client-encoder context from the endpoint (e.g. chat `streamUsage`). */
  client?: Omit<ClientContext, "model">;
  /**
   * The client's headers as a relay forwards them, where the endpoint read some out of the body
   * (a cloud's `anthropic_version`); default: the request's own.
   */
  headers?: Headers;
}

/** A non-generation endpoint of a provider's API (compact, count_tokens), relayed as JSON. */
export interface OtherEndpoint {
  ingress: Codec;
  body: JsonBody;
  path: string;
  /** What it does on a platform; absent: platforms do not serve it. */
  operation?: Operation;
  /** Why only providers of the client's API may answer; default: it is relayed as is. */
  why?: string;
  /** The client's headers as the relay forwards them (`GenerationSpec.headers`). */
  headers?: Headers;
  /**
   * The tokens its answer reports (for metrics and the access log); default: the ingress codec's
   * reading.
   */
  usage?: ReadUsage;
}
