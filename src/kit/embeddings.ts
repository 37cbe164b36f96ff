/**
 * Embeddings, the second operation beside generation: the request and answer in neutral form,
 * and how a provider wire takes them (`EmbeddingWire`: OpenAI's `/embeddings`, Gemini's
 * `batchEmbedContents`, …); what an endpoint declares is `EmbeddingSpec` (./generation.ts).
 * The core routes, fails over, splits the inputs into the calls a wire takes and puts the
 * vectors back in input order (src/request/embeddings.ts); each wire's plugin encodes and decodes.
 */
import { badRequest, GatewayError } from "./errors.ts";

/** One input: a text, or token ids (of the model's own tokenizer). */
export type EmbeddingInput = string | readonly number[];

/** An embeddings request, whatever wire it came in. */
export interface EmbeddingRequest {
  /** In the client's order; never empty. */
  inputs: readonly EmbeddingInput[];
  /** The vector length asked for; absent: the model's own. */
  dimensions?: number;
  /** The end user, for wires that carry one. */
  user?: string;
}

/** Vectors in input order, and the input tokens they took. */
export interface Embeddings {
  /** Numbers as the provider sent them (a JSON array), or float32 (decoded from bytes). */
  vectors: readonly ArrayLike<number>[];
  inputTokens: number;
}

/** One call's answer, as its wire reads it. */
export interface WireAnswer {
  /** One per input of the call, in its order. */
  vectors: ArrayLike<number>[];
  /** Input tokens the provider counted; undefined: it reports none (the core estimates). */
  inputTokens?: number;
}

/** How many inputs one call of a wire may carry. */
export interface BatchLimit {
  /** At most this many (1: one input per call). */
  inputs: number;
  /** At most this many tokens in all, as the core estimates them (src/request/embeddings.ts). */
  tokens?: number;
}

/** How a provider wire takes embeddings. */
export interface EmbeddingWire {
  /** Names the wire in messages and docs (`openai`, `gemini`, `vertex-predict`, …). */
  id: string;
  /** Whether it takes token-id inputs (else such a request is a 400 naming `input`). */
  tokenIds?: boolean;
  /** Whether it carries the end user (`user`); else a request's is dropped, and reported. */
  user?: boolean;
  batch(model: string): BatchLimit;
  /**
   * The path of a call carrying `count` inputs on the vendor's own API (Gemini's
   * `:batchEmbedContents`); a platform's address may build on it (docs/design.md).
   */
  path(model: string, count: number): string;
  /**
   * The body of one call carrying `req.inputs` (within `batch`). Throws a 400 naming the field
   * the wire cannot take (`dimensions`), before any call is made.
   */
  encode(req: EmbeddingRequest, model: string): Record<string, unknown>;
  /**
   * A successful answer of a call that carried `count` inputs, given its headers (some wires
   * count tokens there). Throws a 502 GatewayError for an answer without `count` vectors.
   */
  decode(json: Record<string, unknown>, headers: Headers, count: number): WireAnswer;
}

/**
 * Checks `dimensions` against what a model makes: `sizes` it may be asked for (undefined:
 * none, it makes `native` only). A size it cannot make is a 400 naming `dimensions`.
 */
export function checkDimensions(
  dimensions: number | undefined,
  what: string,
  sizes: readonly number[] | undefined,
  native?: number,
): void {
  if (dimensions === undefined || dimensions === native || sizes?.includes(dimensions)) return;
  const can = sizes ? `${sizes.join(", ")}` : `${native} only`;
  throw badRequest(`dimensions: ${what} makes vectors of ${can}, not ${dimensions}`, "dimensions");
}

/** A 502 for a successful answer a wire cannot read (`why`: what it lacks). */
export const unreadableAnswer = (why: string) =>
  new GatewayError(502, "upstream", `the embeddings answer ${why}`);
