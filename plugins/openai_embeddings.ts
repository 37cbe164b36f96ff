/**
 * OpenAI's embeddings, both sides: the client endpoint `POST /v1/embeddings` (every embeddings
 * client and framework speaks it) and the wire of OpenAI-API providers (`/embeddings` beside
 * the base URL: OpenAI, Azure OpenAI, compatible servers), which chat and Responses providers
 * share. Vectors travel as JSON numbers (`float`) or as base64 of little-endian float32
 * (`base64`, what the OpenAI SDK asks for by default and decodes).
 */
import { z } from "zod";
import {
  type EmbeddingInput,
  type EmbeddingWire,
  unreadableAnswer,
  type WireAnswer,
} from "../src/kit/embeddings.ts";
import type { EmbeddingSpec } from "../src/kit/generation.ts";
import { badRequest } from "../src/kit/errors.ts";
import type { PluginHandler } from "../src/kit/handler.ts";
import { modelOf } from "../src/kit/http.ts";
import { parseBody } from "../src/kit/validate.ts";

/** The most inputs one call takes. */
const MAX_INPUTS = 2048;

const tokenIds = z.array(z.number().int().min(0));

const requestSchema = z.looseObject({
  input: z.union([z.string(), z.array(z.string()), tokenIds, z.array(tokenIds)]),
  encoding_format: z.enum(["float", "base64"]).nullish(),
  dimensions: z.number().int().positive().nullish(),
  user: z.string().nullish(),
});

/** `input` as a list of inputs: a text or token ids is one; an empty one is a 400. */
function inputsOf(input: z.infer<typeof requestSchema>["input"]): EmbeddingInput[] {
  const inputs: EmbeddingInput[] = typeof input === "string" || typeof input[0] === "number"
    ? [input as EmbeddingInput]
    : (input as EmbeddingInput[]);
  if (inputs.length === 0) throw badRequest("input: expected at least one input", "input");
  const empty = inputs.findIndex((i) => i.length === 0);
  if (empty >= 0) {
    const at = inputs === input ? `input[${empty}]` : "input";
    throw badRequest(`${at}: must not be empty`, "input");
  }
  return inputs;
}

/** A vector as base64 of its little-endian float32 values. */
function float32Base64(vector: ArrayLike<number>): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < vector.length; i++) view.setFloat32(i * 4, vector[i], true);
  return bytes.toBase64();
}

/** Base64 of little-endian float32 values as a vector; undefined if it is not that. */
function base64Float32(text: string): Float32Array | undefined {
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.fromBase64(text);
  } catch {
    return undefined;
  }
  if (bytes.byteLength % 4 !== 0) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** `usage.prompt_tokens` of an embeddings answer, if it is a count. */
function promptTokens(json: Record<string, unknown>): number | undefined {
  const n = (json.usage as { prompt_tokens?: unknown } | undefined)?.prompt_tokens;
  return typeof n === "number" && n >= 0 ? n : undefined;
}

/**
 * OpenAI's wire. Converted calls ask for base64 (exact float32, a third of the bytes); an
 * OpenAI-compatible server that answers numbers anyway is read as well.
 */
export const openAiEmbeddings: EmbeddingWire = {
  id: "openai",
  tokenIds: true,
  user: true,
  batch: () => ({ inputs: MAX_INPUTS }),
  path: () => "/embeddings",
  encode: ({ inputs, dimensions, user }, model) => ({
    model,
    input: inputs,
    encoding_format: "base64",
    ...(dimensions !== undefined && { dimensions }),
    ...(user !== undefined && { user }),
  }),
  decode(json, _headers, count): WireAnswer {
    const data = json.data;
    if (!Array.isArray(data) || data.length !== count) {
      throw unreadableAnswer(`has not ${count} embeddings in data`);
    }
    const vectors = new Array<ArrayLike<number>>(count);
    for (const [at, item] of data.entries()) {
      const index = typeof item?.index === "number" ? item.index : at;
      const e = item?.embedding;
      const vector = typeof e === "string" ? base64Float32(e) : Array.isArray(e) ? e : undefined;
      if (!vector || !(index >= 0 && index < count) || vectors[index]) {
        throw unreadableAnswer(`has an unreadable embedding at data[${at}]`);
      }
      vectors[index] = vector;
    }
    return { vectors, inputTokens: promptTokens(json) };
  },
};

/** POST /v1/embeddings */
export const embeddingsEndpoint: PluginHandler = async (ctx) => {
  const body = await ctx.jsonBody();
  const model = modelOf(body.json);
  const json = parseBody(requestSchema, body.json);
  const base64 = json.encoding_format === "base64";
  const spec: EmbeddingSpec = {
    wire: openAiEmbeddings,
    body,
    model,
    request: {
      inputs: inputsOf(json.input),
      dimensions: json.dimensions ?? undefined,
      user: json.user ?? undefined,
    },
    answer: ({ vectors, inputTokens }, model) => ({
      object: "list",
      data: vectors.map((v, index) => ({
        object: "embedding",
        index,
        embedding: base64 ? float32Base64(v) : Array.isArray(v) ? v : Array.from(v),
      })),
      model,
      usage: { prompt_tokens: inputTokens, total_tokens: inputTokens },
    }),
    usage: ({ json: [answer] }) => {
      const inputTokens = answer && promptTokens(answer);
      return inputTokens === undefined ? undefined : { inputTokens, outputTokens: 0 };
    },
  };
  return await ctx.embed(spec);
};
