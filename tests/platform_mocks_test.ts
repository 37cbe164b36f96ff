/**
 * The cloud platform mocks (tests/mock/bedrock.ts, vertex.ts, azure.ts) proven faithful by the
 * platforms' official clients: each client signs or authenticates as it does against the real
 * service, and parses the mock's JSON answers (embeddings included), event streams and errors. A
 * mock these clients accept is a fair stand-in for the platform in the gateway's tests.
 */
import assert from "node:assert/strict";
import {
  BEDROCK_ANTHROPIC_VERSION,
  BEDROCK_TEST_CREDENTIALS,
  startMockBedrock,
} from "./mock/bedrock.ts";
import { AZURE_TEST_ENTRA_TOKEN, AZURE_TEST_KEY, startMockAzure } from "./mock/azure.ts";
import { type MockUpstream, TOKENS } from "./mock/upstream.ts";
import { GEMINI_DIMENSIONS, mockTokens, mockVector } from "./mock/embeddings.ts";
import { vertexEmbeddings } from "../plugins/platforms/vertex_embeddings.ts";
import {
  GOOGLE_TOKEN_URL,
  type MockVertex,
  startMockVertex,
  VERTEX_ANTHROPIC_VERSION,
} from "./mock/vertex.ts";
import {
  AnthropicBedrock,
  AnthropicVertex,
  AzureOpenAI,
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  CountTokensCommand,
  GoogleAuth,
  GoogleGenAI,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
  OpenAI,
} from "./sdk/platforms.ts";

const USER = "What is the weather like?";
/** A model id with `:` (sent as `%3A`) and an inference-profile ARN (with `/`). */
const CLAUDE_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const PROFILE_ARN =
  "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-think-tool";

function bedrockClient(
  endpoint: string,
  credentials: Partial<typeof BEDROCK_TEST_CREDENTIALS> = {},
) {
  return new BedrockRuntimeClient({
    region: "us-east-1",
    endpoint,
    credentials: { ...BEDROCK_TEST_CREDENTIALS, ...credentials },
  });
}

/** Runs `test` with a Bedrock mock and an AWS SDK client for it, and shuts both down. */
async function withBedrock(
  test: (mock: MockUpstream, client: BedrockRuntimeClient) => Promise<void>,
) {
  const mock = await startMockBedrock();
  const client = bedrockClient(mock.url);
  try {
    await test(mock, client);
  } finally {
    client.destroy();
    await mock.close();
  }
}

/** The error `run` fails with, or undefined when it succeeds. */
const failureOf = (run: () => Promise<unknown>) => run().then(() => undefined, (e) => e);

Deno.test("bedrock mock: Converse through @aws-sdk/client-bedrock-runtime (SigV4 with session token)", () =>
  withBedrock(async (mock, client) => {
    const out = await client.send(
      new ConverseCommand({
        modelId: CLAUDE_ID,
        messages: [{ role: "user", content: [{ text: USER }] }],
      }),
    );
    assert.equal(out.output?.message?.content?.[0].text, `Hello from converse mock: ${USER}`);
    assert.equal(out.stopReason, "end_turn");
    assert.equal(out.usage?.outputTokens, TOKENS.text);
    const sent = mock.requests.at(-1)!;
    assert.equal(sent.path, "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse");
    assert.equal(sent.headers["x-amz-security-token"], BEDROCK_TEST_CREDENTIALS.sessionToken);
  }));

Deno.test("bedrock mock: ConverseStream frames (reasoning, tool use, metadata) parse in the AWS SDK; the ARN travels as one segment", () =>
  withBedrock(async (mock, client) => {
    const out = await client.send(
      new ConverseStreamCommand({
        modelId: PROFILE_ARN,
        messages: [{ role: "user", content: [{ text: USER }] }],
        toolConfig: {
          tools: [{ toolSpec: { name: "get_weather", inputSchema: { json: { type: "object" } } } }],
        },
      }),
    );
    const kinds: string[] = [];
    let reasoning = "", signature = "", input = "", tool = "", stop = "", outputTokens = 0;
    for await (const event of out.stream!) {
      const [kind] = Object.keys(event).filter((k) => event[k as keyof typeof event]);
      kinds.push(kind);
      const delta = event.contentBlockDelta?.delta;
      reasoning += delta?.reasoningContent?.text ?? "";
      signature += delta?.reasoningContent?.signature ?? "";
      input += delta?.toolUse?.input ?? "";
      tool ||= event.contentBlockStart?.start?.toolUse?.name ?? "";
      stop ||= event.messageStop?.stopReason ?? "";
      outputTokens ||= event.metadata?.usage?.outputTokens ?? 0;
    }
    assert.equal(kinds[0], "messageStart");
    assert.deepEqual(kinds.slice(-2), ["messageStop", "metadata"]);
    assert.match(reasoning, /^The user wrote/);
    assert.ok(signature.length > 0);
    assert.equal(tool, "get_weather");
    assert.deepEqual(JSON.parse(input), { city: "Paris" });
    assert.equal(stop, "tool_use");
    assert.equal(outputTokens, TOKENS.text + TOKENS.reasoning);
    const path = mock.requests.at(-1)!.path;
    assert.equal(path, `/model/${encodeURIComponent(PROFILE_ARN)}/converse-stream`);
  }));

Deno.test("bedrock mock: InvokeModelWithResponseStream chunks hold Anthropic's events, metrics on the last", () =>
  withBedrock(async (_mock, client) => {
    const body = JSON.stringify({
      anthropic_version: BEDROCK_ANTHROPIC_VERSION,
      max_tokens: 100,
      messages: [{ role: "user", content: USER }],
    });
    const out = await client.send(
      new InvokeModelWithResponseStreamCommand({
        modelId: CLAUDE_ID,
        body,
        contentType: "application/json",
      }),
    );
    const events = [];
    for await (const part of out.body!) {
      events.push(JSON.parse(new TextDecoder().decode(part.chunk!.bytes)));
    }
    assert.equal(events[0].type, "message_start");
    const text = events.map((e) => e.delta?.text ?? "").join("");
    assert.equal(text, `Hello from messages mock: ${USER}`);
    assert.equal(events.at(-1).type, "message_stop");
    assert.equal(events.at(-1)["amazon-bedrock-invocationMetrics"].outputTokenCount, TOKENS.text);
  }));

Deno.test("bedrock mock: CountTokens with an InvokeModel body through the AWS SDK; a body InvokeModel refuses is a ValidationException", () =>
  withBedrock(async (mock, client) => {
    const invoke = {
      anthropic_version: BEDROCK_ANTHROPIC_VERSION,
      max_tokens: 100,
      messages: [{ role: "user", content: USER }],
    };
    const body = new TextEncoder().encode(JSON.stringify(invoke));
    const out = await client.send(
      new CountTokensCommand({ modelId: CLAUDE_ID, input: { invokeModel: { body } } }),
    );
    assert.equal(out.inputTokens, Math.ceil(body.length / 4));
    const sent = mock.requests.at(-1)!;
    assert.equal(sent.path, "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens");
    // The SDK sends the blob as base64 inside `input.invokeModel.body`, as the gateway does.
    assert.deepEqual(sent.json, { input: { invokeModel: { body: body.toBase64() } } });
    const { max_tokens: _, ...unbounded } = invoke;
    const refused = await failureOf(() =>
      client.send(
        new CountTokensCommand({
          modelId: CLAUDE_ID,
          input: { invokeModel: { body: new TextEncoder().encode(JSON.stringify(unbounded)) } },
        }),
      )
    );
    assert.equal(refused?.name, "ValidationException");
  }));

Deno.test("bedrock mock: errors as Bedrock sends them reach the AWS SDK by name", async (t) => {
  const mock = await startMockBedrock();
  const client = bedrockClient(mock.url);
  const converse = (modelId: string, c = client) =>
    c.send(
      new ConverseCommand({ modelId, messages: [{ role: "user", content: [{ text: USER }] }] }),
    );
  const rejects = async (call: Promise<unknown>, name: string, status: number) => {
    const error = await call.then(() => undefined, (e) => e);
    assert.equal(error?.name, name);
    assert.equal(error?.$metadata?.httpStatusCode, status);
    return error as Error;
  };
  const noRetry = new BedrockRuntimeClient({
    region: "us-east-1",
    endpoint: mock.url,
    credentials: BEDROCK_TEST_CREDENTIALS,
    maxAttempts: 1,
  });
  try {
    await t.step("HTTP ThrottlingException (429)", async () => {
      await rejects(converse("claude-err429", noRetry), "ThrottlingException", 429);
    });
    await t.step("a wrong secret key fails the signature check", async () => {
      const wrong = bedrockClient(mock.url, { secretAccessKey: "not-the-secret" });
      await rejects(converse(CLAUDE_ID, wrong), "InvalidSignatureException", 403);
      wrong.destroy();
    });
    await t.step("a missing session token is an unrecognised client", async () => {
      const bare = bedrockClient(mock.url, { sessionToken: undefined });
      await rejects(converse(CLAUDE_ID, bare), "UnrecognizedClientException", 403);
      bare.destroy();
    });
    await t.step("throttlingException frame before any content", async () => {
      const out = await noRetry.send(
        new ConverseStreamCommand({
          modelId: "claude-earlyerr",
          messages: [{ role: "user", content: [{ text: USER }] }],
        }),
      );
      const seen: string[] = [];
      const error = await failureOf(async () => {
        for await (const event of out.stream!) seen.push(Object.keys(event)[0]);
      });
      assert.equal(error?.name, "ThrottlingException");
      assert.deepEqual(seen, ["messageStart"]);
    });
    await t.step("modelStreamErrorException after some content", async () => {
      const out = await noRetry.send(
        new ConverseStreamCommand({
          modelId: "claude-errevent",
          messages: [{ role: "user", content: [{ text: USER }] }],
        }),
      );
      let text = "";
      const error = await failureOf(async () => {
        for await (const event of out.stream!) text += event.contentBlockDelta?.delta?.text ?? "";
      });
      assert.equal(error?.name, "ModelStreamErrorException");
      assert.ok(text.length > 0);
    });
    await t.step("a cut event stream is an error in the SDK, not a normal end", async () => {
      // Over HTTP/2 the reset reaches the SDK as RST_STREAM, before or after the first events.
      const error = await failureOf(async () => {
        const out = await noRetry.send(
          new ConverseStreamCommand({
            modelId: "claude-cut",
            messages: [{ role: "user", content: [{ text: USER }] }],
          }),
        );
        for await (const _ of out.stream!) { /* drain */ }
      });
      assert.match(String(error), /NGHTTP2|reset|closed/i);
    });
    await t.step("echo quotes the request's credentials in Bedrock's error", async () => {
      const error = await rejects(
        converse("claude-echo-err403", noRetry),
        "AccessDeniedException",
        403,
      );
      assert.ok(error.message.includes(BEDROCK_TEST_CREDENTIALS.sessionToken));
      assert.ok(error.message.includes(`Credential=${BEDROCK_TEST_CREDENTIALS.accessKeyId}/`));
    });
    await t.step("InvokeModel refuses `model` and `stream` as extraneous keys", async () => {
      for (const key of ["model", "stream"]) {
        const body = JSON.stringify({
          anthropic_version: BEDROCK_ANTHROPIC_VERSION,
          max_tokens: 10,
          messages: [{ role: "user", content: USER }],
          [key]: key === "stream" ? true : CLAUDE_ID,
        });
        const error = await rejects(
          noRetry.send(new InvokeModelCommand({ modelId: CLAUDE_ID, body })),
          "ValidationException",
          400,
        );
        assert.match(error.message, new RegExp(`extraneous key \\[${key}\\] is not permitted`));
      }
    });
    await t.step(
      "a Converse body without messages is a ValidationException naming the field",
      async () => {
        const error = await rejects(
          noRetry.send(new ConverseCommand({ modelId: CLAUDE_ID, messages: undefined })),
          "ValidationException",
          400,
        );
        assert.match(error.message, /'messages'/);
      },
    );
  } finally {
    client.destroy();
    noRetry.destroy();
    await mock.close();
  }
});

Deno.test("bedrock mock: @anthropic-ai/bedrock-sdk messages.create, JSON and stream", async () => {
  const mock = await startMockBedrock();
  const client = new AnthropicBedrock({
    awsAccessKey: BEDROCK_TEST_CREDENTIALS.accessKeyId,
    awsSecretKey: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
    awsSessionToken: BEDROCK_TEST_CREDENTIALS.sessionToken,
    awsRegion: "us-east-1",
    baseURL: mock.url,
  });
  try {
    const params = {
      model: CLAUDE_ID,
      max_tokens: 100,
      messages: [{ role: "user" as const, content: USER }],
    };
    const message = await client.messages.create(params);
    assert.deepEqual(message.content, [{
      type: "text",
      text: `Hello from messages mock: ${USER}`,
    }]);
    const sent = mock.requests.at(-1)!;
    // Unlike the AWS SDK, this client leaves `:` unencoded (legal in a path segment); the
    // signature covers the path as sent either way.
    assert.equal(sent.path, `/model/${CLAUDE_ID}/invoke`);
    // The SDK copies its dated `anthropic-version` header into the body; Bedrock takes it.
    assert.match(sent.json.anthropic_version, /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(!("model" in sent.json) && !("stream" in sent.json));
    let text = "";
    const stream = await client.messages.create({ ...params, model: "claude-think", stream: true });
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") {
        text += event.delta.text;
      }
    }
    assert.equal(text, `Hello from messages mock: ${USER}`);
    assert.equal(mock.requests.at(-1)!.path, "/model/claude-think/invoke-with-response-stream");
  } finally {
    await mock.close();
  }
});

Deno.test("bedrock mock: a Bedrock API key is accepted as Bearer; another key is refused", async () => {
  const mock = await startMockBedrock({ apiKey: "ABSKbW9jay1iZWRyb2Nr" });
  try {
    const call = (key: string) =>
      fetch(`${mock.url}/model/${encodeURIComponent(CLAUDE_ID)}/converse`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ messages: [{ role: "user", content: [{ text: USER }] }] }),
      });
    const ok = await call("ABSKbW9jay1iZWRyb2Nr");
    assert.equal(ok.status, 200);
    assert.equal(
      (await ok.json()).output.message.content[0].text,
      `Hello from converse mock: ${USER}`,
    );
    const refused = await call("ABSKd3Jvbmc=");
    assert.equal(refused.status, 403);
    assert.match(refused.headers.get("x-amzn-errortype")!, /^UnrecognizedClientException:/);
    assert.ok(typeof (await refused.json()).message === "string");
  } finally {
    await mock.close();
  }
});

/**
 * google-auth-library (10.x, under both Vertex SDKs) posts to Google's token URL whatever the
 * service-account file's token_uri says, and signs that URL as the JWT audience; the only way
 * to reach a loopback token endpoint is its transporter's fetch, which this redirects.
 */
function googleAuthFor(mock: MockVertex) {
  const fetchImplementation = (input: string | URL | Request, init?: RequestInit) =>
    fetch(String(input) === GOOGLE_TOKEN_URL ? mock.serviceAccount.token_uri : input, init);
  return {
    credentials: mock.serviceAccount,
    scopes: ["https://www.googleapis.com/auth/cloud-platform"],
    clientOptions: { transporterOptions: { fetchImplementation } },
  };
}

/** Texts the embeddings tests send. */
const TEXTS = ["first text", "second text"];
const vectors = (dimensions: number) => TEXTS.map((t) => mockVector(t, dimensions));

/** @google/genai in Vertex mode against the mock, its tokens minted from the mock's account. */
const genaiOnVertex = (mock: MockVertex) =>
  new GoogleGenAI({
    vertexai: true,
    project: mock.serviceAccount.project_id,
    location: "us-central1",
    httpOptions: { baseUrl: mock.url },
    googleAuthOptions: googleAuthFor(mock),
  });

Deno.test("vertex mock: @google/genai in Vertex mode, JSON and SSE, with a token minted from the service account", async () => {
  const mock = await startMockVertex();
  const ai = genaiOnVertex(mock);
  try {
    const out = await ai.models.generateContent({ model: "gemini-2.5-flash", contents: USER });
    assert.equal(out.text, `Hello from generate-content mock: ${USER}`);
    let text = "";
    const stream = await ai.models.generateContentStream({ model: "gemini-think", contents: USER });
    for await (const chunk of stream) text += chunk.text ?? "";
    assert.equal(text, `Hello from generate-content mock: ${USER}`);
    const paths = mock.requests.map((r) => r.path + r.search);
    assert.equal(paths[0], "/token");
    assert.match(
      paths[1],
      /^\/v1beta1\/projects\/mock-project\/locations\/us-central1\/publishers\/google\/models\/gemini-2.5-flash:generateContent$/,
    );
    assert.match(paths[2], /:streamGenerateContent\?alt=sse$/);
    assert.equal(mock.tokensIssued(), 1);
  } finally {
    await mock.close();
  }
});

Deno.test("vertex mock: @anthropic-ai/vertex-sdk rawPredict, streamRawPredict and count-tokens", async () => {
  const mock = await startMockVertex();
  const client = new AnthropicVertex({
    region: "us-east5",
    projectId: mock.serviceAccount.project_id,
    baseURL: `${mock.url}/v1`,
    googleAuth: new GoogleAuth(googleAuthFor(mock)),
  });
  try {
    const params = { max_tokens: 100, messages: [{ role: "user" as const, content: USER }] };
    const message = await client.messages.create({
      ...params,
      model: "claude-sonnet-4-5@20250929",
    });
    assert.deepEqual(message.content, [{
      type: "text",
      text: `Hello from messages mock: ${USER}`,
    }]);
    const sent = mock.requests.at(-1)!;
    assert.equal(
      sent.path,
      "/v1/projects/mock-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict",
    );
    assert.ok(!("model" in sent.json));
    let thinking = "";
    const stream = await client.messages.create({ ...params, model: "claude-think", stream: true });
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "thinking_delta") {
        thinking += event.delta.thinking;
      }
    }
    assert.match(thinking, /^The user wrote/);
    assert.match(mock.requests.at(-1)!.path, /\/claude-think:streamRawPredict$/);
    const counted = await client.messages.countTokens({ ...params, model: "claude-sonnet-4-5" });
    assert.ok(counted.input_tokens > 0);
    assert.match(mock.requests.at(-1)!.path, /\/anthropic\/models\/count-tokens:rawPredict$/);
    assert.equal(mock.tokensIssued(), 1);
  } finally {
    await mock.close();
  }
});

Deno.test("azure mock: openai's AzureOpenAI (api-key header) on the v1 Responses API, JSON and stream", async () => {
  const mock = await startMockAzure();
  const client = new AzureOpenAI({
    baseURL: `${mock.url}/openai/v1`,
    apiKey: AZURE_TEST_KEY,
    apiVersion: "preview",
  });
  try {
    const out = await client.responses.create({ model: "gpt-5-mini", input: USER });
    assert.equal(out.output_text, `Hello from responses mock: ${USER}`);
    const sent = mock.requests.at(-1)!;
    assert.equal(sent.path, "/openai/v1/responses");
    assert.equal(sent.headers["api-key"], AZURE_TEST_KEY);
    let text = "";
    const stream = await client.responses.create({ model: "gpt-think", input: USER, stream: true });
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") text += event.delta;
    }
    assert.equal(text, `Hello from responses mock: ${USER}`);
  } finally {
    await mock.close();
  }
});

Deno.test("azure mock: chat on the v1 path opens its stream with a prompt-filter chunk the OpenAI client accepts", async () => {
  // AzureOpenAI rewrites /chat/completions to the legacy /deployments/{model}/… path, so the
  // v1 chat API is reached with the plain OpenAI client, as Microsoft documents for v1.
  const mock = await startMockAzure();
  const client = new OpenAI({ baseURL: `${mock.url}/openai/v1`, apiKey: AZURE_TEST_KEY });
  try {
    const out = await client.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: USER }],
    });
    assert.equal(out.choices[0].message.content, `Hello from chat mock: ${USER}`);
    const chunks = [];
    const stream = await client.chat.completions.create({
      model: "gpt-4o-tool",
      messages: [{ role: "user", content: USER }],
      tools: [{
        type: "function",
        function: { name: "get_weather", parameters: { type: "object" } },
      }],
      stream: true,
    });
    for await (const chunk of stream) chunks.push(chunk);
    assert.deepEqual(chunks[0].choices, []);
    assert.ok("prompt_filter_results" in chunks[0]);
    const args = chunks.map((c) => c.choices[0]?.delta.tool_calls?.[0].function?.arguments ?? "");
    assert.deepEqual(JSON.parse(args.join("")), { city: "Paris" });
  } finally {
    await mock.close();
  }
});

Deno.test("azure mock: an Entra token is accepted as Bearer; a wrong key is Azure's 401", async () => {
  const mock = await startMockAzure();
  const entra = new AzureOpenAI({
    baseURL: `${mock.url}/openai/v1`,
    azureADTokenProvider: () => Promise.resolve(AZURE_TEST_ENTRA_TOKEN),
    apiVersion: "preview",
  });
  const wrong = new AzureOpenAI({
    baseURL: `${mock.url}/openai/v1`,
    apiKey: "not-the-key",
    apiVersion: "preview",
    maxRetries: 0,
  });
  try {
    const out = await entra.responses.create({ model: "gpt-5-mini", input: USER });
    assert.equal(out.output_text, `Hello from responses mock: ${USER}`);
    assert.equal(mock.requests.at(-1)!.headers.authorization, `Bearer ${AZURE_TEST_ENTRA_TOKEN}`);
    const error = await wrong.responses.create({ model: "gpt-5-mini", input: USER }).catch((e) =>
      e
    );
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.match(error.message, /Access denied due to invalid subscription key/);
  } finally {
    await mock.close();
  }
});

Deno.test("vertex mock: Claude bodies are checked as Vertex does; a stale or missing token is Google's 401", async () => {
  const mock = await startMockVertex();
  const auth = new GoogleAuth(googleAuthFor(mock));
  try {
    const token = await auth.getAccessToken();
    const url =
      `${mock.url}/v1/projects/mock-project/locations/us-east5/publishers/anthropic/models/claude:rawPredict`;
    const post = (body: unknown, authorization = `Bearer ${token}`) =>
      fetch(url, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const base = { max_tokens: 10, messages: [{ role: "user", content: USER }] };
    const cases: [unknown, RegExp][] = [
      [{ ...base, anthropic_version: VERTEX_ANTHROPIC_VERSION, model: "claude" }, /^model: /],
      [base, /anthropic_version/],
    ];
    for (const [body, message] of cases) {
      const res = await post(body);
      assert.equal(res.status, 400);
      const error = await res.json();
      assert.equal(error.error.type, "invalid_request_error");
      assert.match(error.error.message, message);
    }
    for (const authorization of ["Bearer ya29.not-issued", ""]) {
      const res = await post(
        { ...base, anthropic_version: VERTEX_ANTHROPIC_VERSION },
        authorization,
      );
      assert.equal(res.status, 401);
      assert.equal((await res.json()).error.status, "UNAUTHENTICATED");
    }
  } finally {
    await mock.close();
  }
});

Deno.test("vertex mock: @google/genai in Vertex mode picks :predict or :embedContent as the gateway does", async () => {
  const mock = await startMockVertex();
  const ai = genaiOnVertex(mock);
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

Deno.test("bedrock mock: Titan and Cohere embeddings bodies through the AWS SDK's InvokeModel (SigV4)", async () => {
  const mock = await startMockBedrock();
  const client = bedrockClient(mock.url);
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
