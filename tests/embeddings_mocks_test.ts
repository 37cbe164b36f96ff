/**
 * The embeddings mocks (tests/mock/embeddings.ts) proven faithful by each vendor's official
 * client, talking to them directly (no gateway): the OpenAI SDK (base64 by default) on OpenAI's
 * and Azure's v1 paths, @google/genai in Gemini API mode (batchEmbedContents) and in Vertex mode (which
 * picks `:predict` or `:embedContent` by model name: the gateway's choice is checked against
 * it), and the AWS SDK's InvokeModel with Titan's and Cohere's bodies, SigV4-signed.
 */
import assert from "node:assert/strict";
import { vertexEmbeddings } from "../plugins/platforms/vertex_embeddings.ts";
import { BEDROCK_TEST_CREDENTIALS, startMockBedrock } from "./mock/bedrock.ts";
import { AZURE_TEST_KEY, startMockAzure } from "./mock/azure.ts";
import { GEMINI_DIMENSIONS, mockTokens, mockVector, OPENAI_DIMENSIONS } from "./mock/embeddings.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { GOOGLE_TOKEN_URL, startMockVertex } from "./mock/vertex.ts";
import { BedrockRuntimeClient, GoogleGenAI, InvokeModelCommand, OpenAI } from "./sdk/platforms.ts";
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

Deno.test("embeddings mocks: @google/genai in Vertex mode picks :predict or :embedContent as the gateway does", async () => {
  const mock = await startMockVertex();
  const fetchImplementation = (input: string | URL | Request, init?: RequestInit) =>
    fetch(String(input) === GOOGLE_TOKEN_URL ? mock.serviceAccount.token_uri : input, init);
  const ai = new GoogleGenAI({
    vertexai: true,
    project: mock.serviceAccount.project_id,
    location: "us-central1",
    httpOptions: { baseUrl: mock.url },
    googleAuthOptions: {
      credentials: mock.serviceAccount,
      scopes: ["https://www.googleapis.com/auth/cloud-platform"],
      clientOptions: { transporterOptions: { fetchImplementation } },
    },
  });
  try {
    const cases: [model: string, contents: string[], action: string][] = [
      ["text-embedding-005", TEXTS, "predict"],
      ["gemini-embedding-001", TEXTS.slice(0, 1), "predict"],
      ["gemini-embedding-2", TEXTS.slice(0, 1), "embedContent"],
      ["multimodal-maas-embedder", TEXTS.slice(0, 1), "embedContent"],
    ];
    for (const [model, contents, action] of cases) {
      const res = await ai.models.embedContent({
        model,
        contents,
        config: { outputDimensionality: 5 },
      });
      const expected = contents.map((t) => mockVector(t, 5));
      assert.deepEqual(res.embeddings!.map((e) => e.values), expected, model);
      assert.ok(mock.requests.at(-1)!.path.endsWith(`/${model}:${action}`), model);
      // The gateway's wire for the model calls the same action.
      assert.equal(vertexEmbeddings(model).path(model, contents.length), `${model}:${action}`);
      assert.equal(res.embeddings![0].statistics?.tokenCount, mockTokens(contents[0]));
    }
    const plain = await ai.models.embedContent({ model: "text-embedding-005", contents: TEXTS });
    assert.deepEqual(plain.embeddings!.map((e) => e.values), vectors(GEMINI_DIMENSIONS));
  } finally {
    await mock.close();
  }
});

Deno.test("embeddings mocks: Titan and Cohere bodies through the AWS SDK's InvokeModel (SigV4)", async () => {
  const mock = await startMockBedrock();
  const client = new BedrockRuntimeClient({
    region: "us-east-1",
    endpoint: mock.url,
    credentials: BEDROCK_TEST_CREDENTIALS,
  });
  const invoke = async (modelId: string, body: unknown) => {
    const out = await client.send(
      new InvokeModelCommand({
        modelId,
        body: JSON.stringify(body),
        contentType: "application/json",
        accept: "application/json",
      }),
    );
    return JSON.parse(new TextDecoder().decode(out.body));
  };
  try {
    const titan = await invoke("amazon.titan-embed-text-v2:0", {
      inputText: TEXTS[0],
      dimensions: 256,
      normalize: true,
    });
    assert.deepEqual(titan.embedding, mockVector(TEXTS[0], 256));
    assert.equal(titan.inputTextTokenCount, mockTokens(TEXTS[0]));
    assert.equal(mock.requests.at(-1)!.path, "/model/amazon.titan-embed-text-v2%3A0/invoke");
    const cohere = await invoke("us.cohere.embed-v4:0", {
      texts: TEXTS,
      input_type: "search_document",
      embedding_types: ["float"],
      output_dimension: 512,
    });
    assert.equal(cohere.response_type, "embeddings_by_type");
    assert.deepEqual(cohere.embeddings.float, vectors(512));
    const v3 = await invoke("cohere.embed-english-v3", { texts: TEXTS, input_type: "clustering" });
    assert.deepEqual(v3.embeddings, vectors(1024));
    // Bedrock's refusals reach the SDK by name.
    const refused = await invoke("cohere.embed-english-v3", {
      texts: TEXTS,
      input_type: "search_query",
      output_dimension: 256,
    }).then(() => undefined, (e) => e);
    assert.equal(refused?.name, "ValidationException");
    assert.match(refused.message, /extraneous key \[output_dimension\]/);
  } finally {
    client.destroy();
    await mock.close();
  }
});
