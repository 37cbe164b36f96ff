/**
 * The embeddings endpoints of the mock providers, in each vendor's wire: OpenAI's (and Azure's)
 * `/embeddings` (float or base64 of little-endian float32, token-id inputs), the Gemini API's
 * `:embedContent` / `:batchEmbedContents`, Vertex's `:predict` / `:embedContent`, and Bedrock's
 * InvokeModel bodies of Titan Text Embeddings and Cohere Embed. Each checks its body as the
 * vendor does (unknown keys, limits per call, sizes a model can make) and answers with
 * `mockVector(input, dimensions)`, so a test knows every vector bit for bit, and with the
 * vendor's own token counts (`mockTokens`) where it reports them.
 *
 * Faults, besides the model-name scenarios of upstream.ts: an input containing `#errNNN` fails
 * the call that carries it with that status in the vendor's envelope; one containing `#slow`
 * holds its call SLOW_CALL_MS, `#slowNNN` NNN ms (CALLS tracks how many calls are in flight at
 * most).
 */
import type { Call, Endpoint } from "./upstream.ts";
import type { ErrorReply, Json, Vendor } from "./vendor.ts";

/** How long a call carrying a `#slow` input is held. */
export const SLOW_CALL_MS = 40;

/** Calls in flight now and at most (tests reset `max`). */
export const CALLS = { inFlight: 0, max: 0 };

/**
 * The mock's vector of an input: float32 values (as JSON numbers they read back exactly), the
 * same on every wire for the same input and length. Token ids embed as their list.
 */
export function mockVector(input: string | readonly number[], dimensions: number): number[] {
  const text = typeof input === "string" ? input : `ids:${input.join(",")}`;
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  const out: number[] = [];
  for (let i = 0; i < dimensions; i++) {
    h = Math.imul(h ^ (h >>> 15), 2246822519) ^ i;
    out.push(Math.fround(((h >>> 0) % 20001 - 10000) / 10001));
  }
  return out;
}

/** The tokens the mock counts for an input (about 4 characters a token; ids count as such). */
export const mockTokens = (input: string | readonly number[]) =>
  typeof input === "string" ? Math.max(1, Math.ceil(input.length / 4)) : input.length;

const sum = (inputs: readonly (string | readonly number[])[]) =>
  inputs.reduce((n, i) => n + mockTokens(i), 0);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The vendor's error answer as a Response. */
function errorAnswer(vendor: Vendor, status: number, message?: string): Response {
  const e: ErrorReply = vendor.error(status, message ? { message } : undefined);
  return new Response(JSON.stringify(e.body), {
    status: e.status,
    headers: { "content-type": vendor.jsonContentType, ...e.headers },
  });
}

/**
 * An embeddings endpoint: `read` returns the call's inputs and options or the vendor's refusal
 * (a message), `answer` the body (and headers) for their vectors.
 */
interface Wire {
  read(call: Call): { inputs: (string | number[])[]; dimensions: number } | string;
  answer(
    vectors: number[][],
    inputs: (string | number[])[],
    call: Call,
  ): { body: Json; headers?: Record<string, string> };
}

function embeddingsEndpoint(path: RegExp, vendor: Vendor, wire: Wire, model?: Endpoint["model"]) {
  return {
    path,
    vendor,
    model,
    answer: async (call: Call) => {
      const read = wire.read(call);
      if (typeof read === "string") return errorAnswer(vendor, 400, read);
      const texts = read.inputs.filter((i): i is string => typeof i === "string");
      const fault = texts.map((t) => t.match(/#err(\d{3})/)).find((m) => m);
      if (fault) return errorAnswer(vendor, Number(fault[1]));
      CALLS.inFlight++;
      CALLS.max = Math.max(CALLS.max, CALLS.inFlight);
      try {
        const slow = texts.map((t) => t.match(/#slow(\d*)/)).find((m) => m);
        if (slow) await sleep(Number(slow[1] || SLOW_CALL_MS));
      } finally {
        CALLS.inFlight--;
      }
      const vectors = read.inputs.map((i) => mockVector(i, read.dimensions));
      const { body, headers } = wire.answer(vectors, read.inputs, call);
      return new Response(JSON.stringify(body), {
        headers: { "content-type": vendor.jsonContentType, ...headers },
      });
    },
  } satisfies Endpoint;
}

const isInt = (n: unknown, min = 1): n is number => Number.isInteger(n) && (n as number) >= min;
const unknownKeys = (body: Json, known: string[]) =>
  Object.keys(body).filter((k) => !known.includes(k));

/** OpenAI's `/embeddings` (Azure's too): the default length is OPENAI_DIMENSIONS. */
export const OPENAI_DIMENSIONS = 12;

const openAiWire: Wire = {
  read({ body }) {
    const input = body.input;
    const inputs = typeof input === "string" || typeof input?.[0] === "number" ? [input] : input;
    const text = (i: unknown) => typeof i === "string" && i !== "";
    const ids = (i: unknown) => Array.isArray(i) && i.length > 0 && i.every((n) => isInt(n, 0));
    if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((i) => text(i) || ids(i))) {
      return "'$.input' is invalid. Please check the API reference: " +
        "https://platform.openai.com/docs/api-reference.";
    }
    if (inputs.length > 2048) return "'$.input' is invalid: at most 2048 inputs.";
    if (typeof body.model !== "string") return "you must provide a model parameter";
    const format = body.encoding_format;
    if (format !== undefined && format !== "float" && format !== "base64") {
      return `'${format}' is not one of ['float', 'base64'] - 'encoding_format'`;
    }
    const dimensions = body.dimensions ?? OPENAI_DIMENSIONS;
    if (!isInt(dimensions)) return `Invalid 'dimensions': must be a positive integer.`;
    return { inputs, dimensions };
  },
  answer(vectors, inputs, { body }) {
    const base64 = body.encoding_format === "base64";
    const data = vectors.map((v, index) => ({
      object: "embedding",
      index,
      embedding: base64 ? littleEndianBase64(v) : v,
    }));
    const n = sum(inputs);
    return {
      body: {
        object: "list",
        data,
        model: body.model,
        usage: { prompt_tokens: n, total_tokens: n },
      },
    };
  },
};

/** Float32 values as base64 of their little-endian bytes, written byte by byte. */
function littleEndianBase64(vector: number[]): string {
  const view = new DataView(new ArrayBuffer(vector.length * 4));
  vector.forEach((v, i) => view.setFloat32(i * 4, v, true));
  return new Uint8Array(view.buffer).toBase64();
}

export const openAiEmbeddingsEndpoint = (path: RegExp, vendor: Vendor) =>
  embeddingsEndpoint(path, vendor, openAiWire);

/** Gemini's default length: GEMINI_DIMENSIONS (Vertex's models alike). */
export const GEMINI_DIMENSIONS = 10;

/** `{parts: [{text}]}` (a role allowed): its text, or undefined. */
function contentText(content: Json): string | undefined {
  const known = unknownKeys(content ?? {}, ["parts", "role"]).length === 0;
  const parts = content?.parts;
  if (!known || !Array.isArray(parts) || parts.length !== 1) return undefined;
  const text = parts[0]?.text;
  return typeof text === "string" && Object.keys(parts[0]).length === 1 ? text : undefined;
}

const geminiModelOf = (m: RegExpMatchArray) => decodeURIComponent(m[1]);

/** The Gemini API's `:embedContent` (one content) and `:batchEmbedContents` (≤ 100 requests). */
export function geminiEmbeddingsEndpoints(vendor: Vendor, at = "/v1beta/models"): Endpoint[] {
  const one: Wire = {
    read({ body }) {
      const extra = unknownKeys(body, ["content", "taskType", "title", "outputDimensionality"]);
      if (extra.length) return `Invalid JSON payload received. Unknown name "${extra[0]}".`;
      const text = contentText(body.content);
      if (text === undefined) {
        return "* EmbedContentRequest.content: content must have one text part";
      }
      const dimensions = body.outputDimensionality ?? GEMINI_DIMENSIONS;
      if (!isInt(dimensions)) return "* outputDimensionality: must be positive";
      return { inputs: [text], dimensions };
    },
    // The Gemini API counts no tokens.
    answer: ([values]) => ({ body: { embedding: { values } } }),
  };
  const batch: Wire = {
    read({ body, model }) {
      const extra = unknownKeys(body, ["requests"]);
      if (extra.length) return `Invalid JSON payload received. Unknown name "${extra[0]}".`;
      const requests = body.requests;
      if (!Array.isArray(requests) || requests.length === 0) return "* requests: required";
      if (requests.length > 100) {
        return "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch";
      }
      const inputs: string[] = [];
      let dimensions: number | undefined;
      for (const [i, r] of requests.entries()) {
        if (r?.model !== `models/${model}`) {
          return `* BatchEmbedContentsRequest.requests[${i}].model: the model of each request ` +
            `must be the batch's (models/${model})`;
        }
        const text = contentText(r.content);
        if (text === undefined) return `* requests[${i}].content: content must have one text part`;
        const d = r.outputDimensionality ?? GEMINI_DIMENSIONS;
        if (!isInt(d) || (dimensions !== undefined && d !== dimensions)) {
          return `* requests[${i}].outputDimensionality: invalid`;
        }
        dimensions = d;
        inputs.push(text);
      }
      return { inputs, dimensions: dimensions! };
    },
    answer: (vectors) => ({ body: { embeddings: vectors.map((values) => ({ values })) } }),
  };
  const path = (action: string) => new RegExp(`^${at}/([^/:]+):${action}$`);
  return [
    embeddingsEndpoint(path("embedContent"), vendor, one, geminiModelOf),
    embeddingsEndpoint(path("batchEmbedContents"), vendor, batch, geminiModelOf),
  ];
}

/** Vertex's `:predict` (instances) and `:embedContent` (one content) under `at`. */
export function vertexEmbeddingsEndpoints(vendor: Vendor, at: (rest: string) => RegExp) {
  const predict: Wire = {
    read({ body, model }) {
      const extra = unknownKeys(body, ["instances", "parameters"]);
      if (extra.length) return `Invalid JSON payload received. Unknown name "${extra[0]}".`;
      const instances = body.instances;
      if (!Array.isArray(instances) || instances.length === 0) return "instances: required";
      if (model === "gemini-embedding-001" && instances.length > 1) {
        return "Unable to submit request because the model supports only one instance per request.";
      }
      if (instances.length > 250) return "The maximum number of instances per request is 250.";
      const inputs: string[] = [];
      for (const instance of instances) {
        if (typeof instance?.content !== "string") return "instances[].content: required string";
        inputs.push(instance.content);
      }
      if (sum(inputs) > 20_000) {
        return "Unable to submit request because the input token count is more than 20000.";
      }
      const dimensions = body.parameters?.outputDimensionality ?? GEMINI_DIMENSIONS;
      if (!isInt(dimensions)) return "parameters.outputDimensionality: invalid";
      return { inputs, dimensions };
    },
    answer: (vectors, inputs) => ({
      body: {
        predictions: vectors.map((values, i) => ({
          embeddings: {
            values,
            statistics: { truncated: false, token_count: mockTokens(inputs[i]) },
          },
        })),
        metadata: { billableCharacterCount: (inputs as string[]).join("").length },
      },
    }),
  };
  const embedContent: Wire = {
    read({ body }) {
      const extra = unknownKeys(body, ["content", "embedContentConfig"]);
      if (extra.length) return `Invalid JSON payload received. Unknown name "${extra[0]}".`;
      const text = contentText(body.content);
      if (text === undefined) return "content: must have one text part";
      const dimensions = body.embedContentConfig?.outputDimensionality ?? GEMINI_DIMENSIONS;
      if (!isInt(dimensions)) return "embedContentConfig.outputDimensionality: invalid";
      return { inputs: [text], dimensions };
    },
    answer: ([values], [text]) => ({
      body: {
        embedding: { values },
        usageMetadata: { promptTokenCount: mockTokens(text), totalTokenCount: mockTokens(text) },
        truncated: false,
      },
    }),
  };
  const modelOf = (m: RegExpMatchArray) => decodeURIComponent(m[1]);
  return [
    embeddingsEndpoint(at("google/models/([^/:]+):predict"), vendor, predict, modelOf),
    embeddingsEndpoint(at("google/models/([^/:]+):embedContent"), vendor, embedContent, modelOf),
  ];
}

/** Bedrock's refusal of a body key it does not know. */
const extraneous = (key: string) =>
  `Malformed input request: #: extraneous key [${key}] is not permitted, please reformat your ` +
  "input and try again.";

/** Bedrock's counts ride in headers on every InvokeModel answer. */
const bedrockCounts = (input: number) => ({
  "x-amzn-bedrock-input-token-count": String(input),
  "x-amzn-bedrock-invocation-latency": "12",
});

/** Titan Text Embeddings V2 (`dimensions` 256/512/1024, default 1024) and V1 (1536 only). */
function titanWire(v2: boolean): Wire {
  return {
    read({ body }) {
      const known = v2 ? ["inputText", "dimensions", "normalize", "embeddingTypes"] : ["inputText"];
      const extra = unknownKeys(body, known);
      if (extra.length) return extraneous(extra[0]);
      if (typeof body.inputText !== "string" || body.inputText === "") {
        return "Malformed input request: #: required key [inputText] not found";
      }
      const dimensions = body.dimensions ?? (v2 ? 1024 : 1536);
      if (![256, 512, 1024, 1536].includes(dimensions) || (v2 && dimensions === 1536)) {
        return `Malformed input request: #/dimensions: ${dimensions} is not a valid enum value`;
      }
      return { inputs: [body.inputText], dimensions };
    },
    answer: ([embedding], [text]) => ({
      body: { embedding, inputTextTokenCount: mockTokens(text) },
      headers: bedrockCounts(mockTokens(text)),
    }),
  };
}

/** Cohere Embed v3 (1024 only) and v4 (`output_dimension` 256/512/1024/1536, default 1536). */
function cohereWire(v4: boolean): Wire {
  return {
    read({ body }) {
      const known = ["texts", "input_type", "truncate", "embedding_types"];
      const extra = unknownKeys(body, v4 ? [...known, "output_dimension", "max_tokens"] : known);
      if (extra.length) return extraneous(extra[0]);
      const texts = body.texts;
      if (!Array.isArray(texts) || !texts.every((t) => typeof t === "string")) {
        return "Malformed input request: #/texts: expected type: JSONArray";
      }
      if (texts.length > 96) {
        return "Malformed input request: #/texts: expected maximum item count: 96";
      }
      const types = ["search_document", "search_query", "classification", "clustering"];
      if (!types.includes(body.input_type)) {
        return "Malformed input request: #: required key [input_type] not found";
      }
      const dimensions = body.output_dimension ?? (v4 ? 1536 : 1024);
      if (![256, 512, 1024, 1536].includes(dimensions)) {
        return `Malformed input request: #/output_dimension: ${dimensions} is not a valid enum value`;
      }
      return { inputs: texts, dimensions };
    },
    answer: (vectors, inputs, { body }) => ({
      body: {
        id: crypto.randomUUID(),
        texts: inputs,
        ...(Array.isArray(body.embedding_types)
          ? { response_type: "embeddings_by_type", embeddings: { float: vectors } }
          : { response_type: "embeddings_floats", embeddings: vectors }),
      },
      headers: bedrockCounts(sum(inputs)),
    }),
  };
}

/** Bedrock's InvokeModel of the embeddings models, before the generic `/invoke`. */
export function bedrockEmbeddingsEndpoints(vendor: Vendor): Endpoint[] {
  const invoke = (family: string) => new RegExp(`^/model/([^/]*${family}[^/]*)/invoke$`);
  const modelOf = (m: RegExpMatchArray) => decodeURIComponent(m[1]);
  return [
    embeddingsEndpoint(invoke("titan-embed-text-v2"), vendor, titanWire(true), modelOf),
    embeddingsEndpoint(invoke("titan-embed-text-v1"), vendor, titanWire(false), modelOf),
    embeddingsEndpoint(invoke("cohere\\.embed-v4"), vendor, cohereWire(true), modelOf),
    embeddingsEndpoint(invoke("cohere\\.embed-[a-z]+-v3"), vendor, cohereWire(false), modelOf),
  ];
}
