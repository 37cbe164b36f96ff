/**
 * The Gemini API's embeddings wire (toward providers only: the gateway's Gemini endpoints serve
 * generation alone): `:embedContent` for one input, `:batchEmbedContents` for up to 100, each
 * request naming the model again. `dimensions` is `outputDimensionality`. Its answers count no
 * tokens (unless a `usageMetadata` comes along): the core estimates them then.
 */
import { type EmbeddingWire, unreadableAnswer, type WireAnswer } from "../../src/kit/embeddings.ts";
import { modelSegment } from "../../src/kit/model_segment.ts";

/** The most requests one `batchEmbedContents` takes. */
const MAX_BATCH = 100;

/** A text as Gemini's content. */
export const textContent = (text: string) => ({ parts: [{ text }] });

/** `values` of a `ContentEmbedding`, if it is an array. */
export function valuesOf(embedding: unknown): number[] | undefined {
  const values = (embedding as { values?: unknown } | undefined)?.values;
  return Array.isArray(values) ? values : undefined;
}

/** `usageMetadata.promptTokenCount`, where an answer carries it. */
export function promptTokenCount(json: Record<string, unknown>): number | undefined {
  const n = (json.usageMetadata as { promptTokenCount?: unknown } | undefined)?.promptTokenCount;
  return typeof n === "number" && n >= 0 ? n : undefined;
}

export const geminiEmbeddings: EmbeddingWire = {
  id: "gemini",
  batch: () => ({ inputs: MAX_BATCH }),
  path: (model, count) =>
    `/v1beta/models/${modelSegment(model, { action: true })}:` +
    (count === 1 ? "embedContent" : "batchEmbedContents"),
  encode({ inputs, dimensions }, model) {
    const dims = dimensions === undefined ? {} : { outputDimensionality: dimensions };
    const texts = inputs as string[];
    if (texts.length === 1) return { content: textContent(texts[0]), ...dims };
    return {
      requests: texts.map((text) => ({
        model: `models/${model}`,
        content: textContent(text),
        ...dims,
      })),
    };
  },
  decode(json, _headers, count): WireAnswer {
    const vectors = count === 1 && json.embedding !== undefined
      ? [valuesOf(json.embedding)]
      : Array.isArray(json.embeddings)
      ? json.embeddings.map(valuesOf)
      : [];
    if (vectors.length !== count || vectors.some((v) => v === undefined)) {
      throw unreadableAnswer(`has not ${count} embeddings with values`);
    }
    return { vectors: vectors as number[][], inputTokens: promptTokenCount(json) };
  },
};
