/**
 * The embeddings mocks of the vendors' own APIs (tests/mock/embeddings.ts) proven faithful by
 * their official clients, talking to them directly (no gateway): the OpenAI SDK (base64 by
 * default) on OpenAI's and Azure's v1 paths, and @google/genai's batchEmbedContents on the Gemini
 * API. The platform mocks' embeddings (Vertex, Bedrock) are proven in
 * tests/platform_mocks_test.ts.
 */
import assert from "node:assert/strict";
import { AZURE_TEST_KEY, startMockAzure } from "./mock/azure.ts";
import { mockTokens, mockVector, OPENAI_DIMENSIONS } from "./mock/embeddings.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { GoogleGenAI, OpenAI } from "./sdk/platforms.ts";
import { PROVIDER_KEY } from "./helpers.ts";

const TEXTS = ["first text", "second text"];
const vectors = (dimensions: number) => TEXTS.map((t) => mockVector(t, dimensions));

Deno.test("embeddings mocks: the OpenAI SDK decodes OpenAI's and Azure's base64 answers", async () => {
  const vendor = await startMockUpstream();
  const azure = await startMockAzure();
  try {
    const openai = new OpenAI({ baseURL: `${vendor.url}/v1`, apiKey: PROVIDER_KEY });
    const res = await openai.embeddings.create({ model: "text-embedding-3-small", input: TEXTS });
    assert.equal(vendor.requests.at(-1)!.json.encoding_format, "base64");
    assert.deepEqual(res.data.map((d) => d.embedding), vectors(OPENAI_DIMENSIONS));
    assert.equal(res.usage.prompt_tokens, TEXTS.reduce((n, t) => n + mockTokens(t), 0));
    // AzureOpenAI rewrites /embeddings to the legacy /deployments/{model}/… path: the v1 API
    // is reached with the plain client, as Microsoft documents for v1.
    const az = new OpenAI({ baseURL: `${azure.url}/openai/v1`, apiKey: AZURE_TEST_KEY });
    const out = await az.embeddings.create({ model: "emb", input: TEXTS, dimensions: 3 });
    assert.deepEqual(out.data.map((d) => d.embedding), vectors(3));
    assert.equal(azure.requests.at(-1)!.path, "/openai/v1/embeddings");
  } finally {
    await vendor.close();
    await azure.close();
  }
});

Deno.test("embeddings mocks: @google/genai's batchEmbedContents on the Gemini API", async () => {
  const vendor = await startMockUpstream();
  try {
    const ai = new GoogleGenAI({ apiKey: PROVIDER_KEY, httpOptions: { baseUrl: vendor.url } });
    const res = await ai.models.embedContent({
      model: "gemini-embedding-001",
      contents: TEXTS,
      config: { outputDimensionality: 4 },
    });
    assert.deepEqual(res.embeddings!.map((e) => e.values), vectors(4));
    assert.equal(
      vendor.requests.at(-1)!.path,
      "/v1beta/models/gemini-embedding-001:batchEmbedContents",
    );
  } finally {
    await vendor.close();
  }
});
