/**
 * Embeddings on Amazon Bedrock, through InvokeModel (`/model/{id}/invoke`) with the model
 * family's own body, chosen by model id (inference-profile prefixes such as `us.`, and ARNs):
 * - Amazon Titan Text Embeddings (`amazon.titan-embed-text-v2:0`): one `inputText` a call;
 *   V2 takes `dimensions` 256, 512 or 1024 and `normalize` (sent true: OpenAI's vectors are
 *   unit length); V1 makes 1536 only. Its answer counts `inputTextTokenCount`.
 * - Cohere Embed (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`,
 *   `cohere.embed-v4:0`): up to 96 `texts` a call, the required `input_type` sent as
 *   `search_document` (OpenAI's body names no task), float vectors asked for by
 *   `embedding_types`; v3 makes 1024 dimensions only, v4 takes `output_dimension` 256, 512,
 *   1024 or 1536. Its body counts nothing: Bedrock's `x-amzn-bedrock-input-token-count` does.
 */
import {
  checkDimensions,
  type EmbeddingWire,
  unreadableAnswer,
  type WireAnswer,
} from "../../src/kit/embeddings.ts";
import { badRequest } from "../../src/kit/errors.ts";
import { modelIdSegment } from "./bedrock_wire.ts";

const invoke = (model: string) => `/model/${modelIdSegment(model)}/invoke`;

/** A count of Bedrock's headers, if it is one. */
function inputTokenHeader(headers: Headers): number | undefined {
  const n = Number(headers.get("x-amzn-bedrock-input-token-count") ?? NaN);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

const isVector = (v: unknown): v is number[] => Array.isArray(v);

/** Titan Text Embeddings: V2 when `sizes` are given, else V1. */
function titan(version: string, sizes?: readonly number[]): EmbeddingWire {
  const native = sizes ? 1024 : 1536;
  return {
    id: `bedrock-titan-${version}`,
    batch: () => ({ inputs: 1 }),
    path: invoke,
    encode({ inputs: [text], dimensions }, model) {
      checkDimensions(dimensions, model, sizes, native);
      if (!sizes) return { inputText: text };
      return { inputText: text, ...dimensions !== undefined && { dimensions }, normalize: true };
    },
    decode(json, headers): WireAnswer {
      if (!isVector(json.embedding)) throw unreadableAnswer("has no embedding");
      const count = json.inputTextTokenCount;
      const inputTokens = typeof count === "number" && count >= 0
        ? count
        : inputTokenHeader(headers);
      return { vectors: [json.embedding], inputTokens };
    },
  };
}

/** Cohere Embed: v4 when `sizes` are given (`output_dimension`), else v3 (1024 only). */
function cohere(version: string, sizes?: readonly number[]): EmbeddingWire {
  return {
    id: `bedrock-cohere-${version}`,
    batch: () => ({ inputs: 96 }),
    path: invoke,
    encode({ inputs, dimensions }, model) {
      checkDimensions(dimensions, model, sizes, sizes ? 1536 : 1024);
      return {
        texts: inputs,
        input_type: "search_document",
        embedding_types: ["float"],
        ...sizes && dimensions !== undefined && { output_dimension: dimensions },
      };
    },
    // `embeddings_by_type` (`{"float": [...]}`), or a bare list (`embeddings_floats`).
    decode(json, headers, count): WireAnswer {
      const e = json.embeddings as { float?: unknown } | unknown[] | undefined;
      const vectors = Array.isArray(e) ? e : e?.float;
      if (!Array.isArray(vectors) || vectors.length !== count || !vectors.every(isVector)) {
        throw unreadableAnswer(`has not ${count} float embeddings`);
      }
      return { vectors, inputTokens: inputTokenHeader(headers) };
    },
  };
}

const FAMILIES: [RegExp, EmbeddingWire][] = [
  [/(^|[./])amazon\.titan-embed-text-v2/, titan("v2", [256, 512, 1024])],
  [/(^|[./])amazon\.titan-embed-text-v1/, titan("v1")],
  [/(^|[./])cohere\.embed-v4/, cohere("v4", [256, 512, 1024, 1536])],
  [/(^|[./])cohere\.embed-(english|multilingual)-v3/, cohere("v3")],
];

/** The InvokeModel wire of a Bedrock embeddings model; a 400 naming the model otherwise. */
export function bedrockEmbeddings(model: string): EmbeddingWire {
  const found = FAMILIES.find(([re]) => re.test(model));
  if (found) return found[1];
  throw badRequest(
    `model: ${JSON.stringify(model.slice(0, 200))} is no embeddings model on Bedrock ` +
      "(served: Amazon Titan Text Embeddings, Cohere Embed v3 and v4)",
    "model",
  );
}
