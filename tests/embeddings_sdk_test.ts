/**
 * The official embeddings clients against every provider wire through the gateway
 * (tests/embeddings_harness.ts): the OpenAI SDK's `embeddings.create` (base64 by default, which
 * it decodes, and explicit `float`), the AI SDK's `embed` / `embedMany` with its OpenAI
 * provider, and LangChain's `OpenAIEmbeddings` (base64 through the OpenAI SDK it wraps). Every
 * vector is compared bit for bit (as float64) with the mock's, in input order, `dimensions`
 * honoured.
 */
import assert from "node:assert/strict";
import { createOpenAI, embed, embedMany, OpenAI, OpenAIEmbeddings } from "./sdk/deps.ts";
import { KEY } from "./helpers.ts";
import { startEmbeddingsGateway, WIRES } from "./embeddings_harness.ts";
import { mockTokens, mockVector } from "./mock/embeddings.ts";

const DOCUMENTS = ["Paris is the capital of France.", "Bonjour", "Embeddings, bit for bit"];

/** Two vector lists equal to the last bit of each float64. */
function sameBits(actual: readonly (readonly number[])[], expected: number[][], what: string) {
  assert.equal(actual.length, expected.length, `${what}: one vector per input`);
  actual.forEach((v, i) => {
    const bits = (x: readonly number[]) => new Uint8Array(Float64Array.from(x).buffer);
    assert.equal(v.length, expected[i].length, `${what}: vector ${i} length`);
    assert.deepEqual(bits(v), bits(expected[i]), `${what}: vector ${i} bits`);
  });
}

const vectors = (inputs: string[], dimensions: number) =>
  inputs.map((i) => mockVector(i, dimensions));

/**
 * The input tokens an answer reports: the provider's count, or where it reports none (the Gemini
 * API) the gateway's estimate, 4 characters a token: the mock's own count.
 */
const tokens = (inputs: string[]) => inputs.reduce((n, i) => n + mockTokens(i), 0);

Deno.test("embeddings SDKs: OpenAI, AI SDK and LangChain get the same vectors from every wire", async (t) => {
  const h = await startEmbeddingsGateway();
  const baseURL = `${h.url}/v1`;
  const openai = new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0 });
  const aiSdk = createOpenAI({ baseURL, apiKey: KEY });
  try {
    for (const w of WIRES) {
      await t.step(`${w.model} (${w.provider} ${w.upstream})`, async (t) => {
        await t.step("openai embeddings.create: base64 by default, decoded", async () => {
          const res = await openai.embeddings.create({ model: w.model, input: DOCUMENTS });
          sameBits(res.data.map((d) => d.embedding), vectors(DOCUMENTS, w.native), "base64");
          assert.deepEqual(res.data.map((d) => d.index), [0, 1, 2]);
          assert.equal(res.usage.prompt_tokens, tokens(DOCUMENTS));
        });
        await t.step("openai embeddings.create: float, dimensions", async () => {
          const res = await openai.embeddings.create({
            model: w.model,
            input: DOCUMENTS[0],
            encoding_format: "float",
            dimensions: w.other,
          });
          sameBits(res.data.map((d) => d.embedding), vectors([DOCUMENTS[0]], w.other), "float");
        });
        await t.step("AI SDK embed and embedMany", async () => {
          const model = aiSdk.embedding(w.model);
          const one = await embed({ model, value: DOCUMENTS[1], maxRetries: 0 });
          sameBits([one.embedding], vectors([DOCUMENTS[1]], w.native), "embed");
          assert.equal(one.usage.tokens, tokens([DOCUMENTS[1]]));
          const many = await embedMany({
            model,
            values: DOCUMENTS,
            maxRetries: 0,
            providerOptions: { openai: { dimensions: w.other } },
          });
          sameBits(many.embeddings, vectors(DOCUMENTS, w.other), "embedMany");
        });
        await t.step("LangChain OpenAIEmbeddings", async () => {
          const lc = new OpenAIEmbeddings({
            model: w.model,
            apiKey: KEY,
            dimensions: w.other,
            maxRetries: 0,
            configuration: { baseURL },
          });
          sameBits(await lc.embedDocuments(DOCUMENTS), vectors(DOCUMENTS, w.other), "documents");
          sameBits([await lc.embedQuery(DOCUMENTS[2])], vectors([DOCUMENTS[2]], w.other), "query");
        });
      });
    }
    await t.step("a provider's error reaches each client as its own error", async () => {
      await assert.rejects(
        openai.embeddings.create({ model: "bedrock-titan", input: ["fine", "#err429"] }),
        (e: InstanceType<typeof OpenAI.RateLimitError>) =>
          e instanceof OpenAI.RateLimitError && /ThrottlingException/.test(e.message),
      );
      await assert.rejects(
        openai.embeddings.create({ model: "claude-emb", input: "x" }),
        (e: InstanceType<typeof OpenAI.BadRequestError>) =>
          e instanceof OpenAI.BadRequestError && /has no embeddings endpoint/.test(e.message),
      );
    });
  } finally {
    await h.close();
  }
});
