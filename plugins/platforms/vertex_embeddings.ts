/**
 * Embeddings on Vertex AI, as @google/genai in Vertex mode chooses by model name
 * (`tIsVertexEmbedContentModel`): `:embedContent` (one content per call) for Gemini embedding
 * models other than `gemini-embedding-001` and for MaaS models; `:predict` with `instances[]`
 * for the others (`text-embedding-*`, `text-multilingual-embedding-*`, and
 * `gemini-embedding-001`, which takes one instance a call; the rest up to 250 instances and
 * 20,000 tokens). Paths are relative to `…/publishers/google/models/`, whatever the provider's
 * `api` (gcp_vertex.ts puts the prefix).
 */
import { type EmbeddingWire, unreadableAnswer, type WireAnswer } from "../../src/kit/embeddings.ts";
import { modelSegment } from "../../src/kit/model_segment.ts";
import { promptTokenCount, textContent, valuesOf } from "../generate-content/embeddings.ts";

/** What `:predict` takes in one call, except from `gemini-embedding-001` (one instance). */
const PREDICT_INSTANCES = 250;
const PREDICT_TOKENS = 20_000;

/** The model `:predict` serves one instance a call, though its name says Gemini. */
const ONE_INSTANCE = "gemini-embedding-001";

/** Whether `model` takes `:embedContent` (as @google/genai decides it). */
const embedsContent = (model: string) =>
  (model.includes("gemini") && model !== ONE_INSTANCE) || model.includes("maas");

const outputDimensionality = (dimensions: number | undefined) =>
  dimensions === undefined ? undefined : { outputDimensionality: dimensions };

/** `:predict`: `instances[].content`, `statistics.token_count` per prediction. */
const predict: EmbeddingWire = {
  id: "vertex-predict",
  batch: (model) =>
    model === ONE_INSTANCE ? { inputs: 1 } : { inputs: PREDICT_INSTANCES, tokens: PREDICT_TOKENS },
  path: (model) => `${modelSegment(model, { action: true })}:predict`,
  encode: ({ inputs, dimensions }) => {
    const parameters = outputDimensionality(dimensions);
    return { instances: inputs.map((content) => ({ content })), ...parameters && { parameters } };
  },
  decode(json, _headers, count): WireAnswer {
    const predictions = Array.isArray(json.predictions) ? json.predictions : [];
    const embeddings = predictions.map((p) => p?.embeddings);
    const vectors = embeddings.map(valuesOf);
    if (vectors.length !== count || vectors.some((v) => v === undefined)) {
      throw unreadableAnswer(`has not ${count} predictions with embeddings`);
    }
    const counts = embeddings.map((e) => e?.statistics?.token_count);
    const counted = counts.every((n) => typeof n === "number" && n >= 0);
    const inputTokens = counted ? counts.reduce((a, b) => a + b, 0) : undefined;
    return { vectors: vectors as number[][], inputTokens };
  },
};

/** `:embedContent`: one `content`, the options in `embedContentConfig`. */
const embedContent: EmbeddingWire = {
  id: "vertex-embed-content",
  batch: () => ({ inputs: 1 }),
  path: (model) => `${modelSegment(model, { action: true })}:embedContent`,
  encode: ({ inputs: [text], dimensions }) => {
    const config = outputDimensionality(dimensions);
    return {
      content: { role: "user", ...textContent(text as string) },
      ...config && { embedContentConfig: config },
    };
  },
  decode(json): WireAnswer {
    const vector = valuesOf(json.embedding);
    if (!vector) throw unreadableAnswer("has no embedding with values");
    return { vectors: [vector], inputTokens: promptTokenCount(json) };
  },
};

/** The wire of an embeddings model on Vertex AI. */
export function vertexEmbeddings(model: string): EmbeddingWire {
  return embedsContent(model) ? embedContent : predict;
}
