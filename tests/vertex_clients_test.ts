/**
 * Vertex AI's own clients aimed at the gateway with only a base URL and the gateway key as their
 * credential (an OAuth2 client holding it as its access token: no Google auth, no network): the
 * Anthropic Vertex SDK (create, stream, countTokens) and `@google/genai` in Vertex mode
 * (generateContent, generateContentStream) on a route of each family — Anthropic, OpenAI chat and
 * Responses, Gemini — JSON and stream, tool round trips included; and on Vertex's own routes,
 * where the gateway relays them with the token it minted (tests/vertex_harness.ts).
 */
import assert from "node:assert/strict";
import {
  assertErrorStatus,
  type Harness,
  KEY,
  MESSAGES,
  model,
  PROVIDERS,
  rejection,
  replyText,
  startHarness,
  step,
  TOOL_ARGS,
  TOOL_DESCRIPTION,
  TOOL_NAME,
  TOOL_REPLY,
  TOOL_RESULT,
  TOOL_SCENARIOS,
  TOOL_SCHEMA,
  upstreamMark,
  USER,
} from "./sdk/common.ts";
import { AnthropicVertex, GoogleGenAI, OAuth2Client } from "./sdk/platforms.ts";
import type { Anthropic, Content, GenerateContentResponse } from "./sdk/deps.ts";
import { CLAUDE_AT, GEMINI_AT, modelCalls, startVertexGateway } from "./vertex_harness.ts";

/** An OAuth2 client whose access token is `key`: what a Google client sends, offline. */
function staticToken(key = KEY): OAuth2Client {
  const client = new OAuth2Client();
  client.setCredentials({ access_token: key });
  return client;
}

const anthropicVertex = (url: string, key = KEY) =>
  new AnthropicVertex({
    baseURL: `${url}/v1`,
    region: "us-east5",
    projectId: "client-project",
    authClient: staticToken(key),
    maxRetries: 0,
  });

const genaiVertex = (url: string, key = KEY) =>
  new GoogleGenAI({
    vertexai: true,
    project: "client-project",
    location: "us-central1",
    httpOptions: { baseUrl: url, retryOptions: { attempts: 1 } },
    googleAuthOptions: { authClient: staticToken(key) },
  });

type Message = Anthropic.Message;
type MessageParam = Anthropic.MessageParam;

const TOOLS = [{
  name: TOOL_NAME,
  description: TOOL_DESCRIPTION,
  input_schema: TOOL_SCHEMA as Anthropic.Tool.InputSchema,
}];

const textOf = (m: Message) => m.content.map((b) => b.type === "text" ? b.text : "").join("");

/** `messages.create`, or the stream helper's final message. */
async function create(
  client: AnthropicVertex,
  stream: boolean,
  params: Anthropic.MessageCreateParamsNonStreaming,
): Promise<Message> {
  return stream
    ? await client.messages.stream(params).finalMessage()
    : await client.messages.create(params);
}

/** A Claude tool round trip: the call, its result sent back, the model's answer to it. */
async function claudeToolLoop(client: AnthropicVertex, stream: boolean, name: string) {
  const messages: MessageParam[] = [{ role: "user", content: USER }];
  const params = {
    model: name,
    max_tokens: 2048,
    tools: TOOLS,
    ...(name.includes("think") && { thinking: { type: "enabled", budget_tokens: 1024 } as const }),
  };
  const first = await create(client, stream, { ...params, messages });
  assert.equal(first.stop_reason, "tool_use");
  const use = first.content.find((b) => b.type === "tool_use");
  assert.ok(use, JSON.stringify(first));
  assert.equal(use.name, TOOL_NAME);
  assert.deepEqual(use.input, TOOL_ARGS);
  messages.push(
    { role: "assistant", content: first.content as MessageParam["content"] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: TOOL_RESULT }] },
  );
  const second = await create(client, stream, { ...params, messages });
  assert.equal(textOf(second), TOOL_REPLY);
}

/** `generateContent`, or the stream's chunks folded: their text and function calls. */
async function generate(ai: GoogleGenAI, stream: boolean, model: string, contents: Content[]) {
  const chunks: GenerateContentResponse[] = stream
    ? await Array.fromAsync(await ai.models.generateContentStream({ model, contents, config }))
    : [await ai.models.generateContent({ model, contents, config })];
  const parts = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
  return {
    text: chunks.map((c) => c.text ?? "").join(""),
    parts,
    call: parts.find((p) => p.functionCall)?.functionCall,
  };
}

const config = {
  tools: [{
    functionDeclarations: [{
      name: TOOL_NAME,
      description: TOOL_DESCRIPTION,
      parametersJsonSchema: TOOL_SCHEMA,
    }],
  }],
};

/** A Gemini tool round trip through genai: the call, its response sent back, the answer. */
async function geminiToolLoop(ai: GoogleGenAI, stream: boolean, name: string) {
  const contents: Content[] = [{ role: "user", parts: [{ text: USER }] }];
  const first = await generate(ai, stream, name, contents);
  assert.ok(first.call, JSON.stringify(first.parts));
  assert.equal(first.call.name, TOOL_NAME);
  assert.deepEqual(first.call.args, TOOL_ARGS);
  contents.push(
    { role: "model", parts: first.parts },
    {
      role: "user",
      parts: [{ functionResponse: { name: TOOL_NAME, response: { output: TOOL_RESULT } } }],
    },
  );
  assert.equal((await generate(ai, stream, name, contents)).text, TOOL_REPLY);
}

Deno.test("vertex clients: @anthropic-ai/vertex-sdk on a route of each family: create, stream, tools, countTokens", async (t) => {
  const h: Harness = await startHarness();
  const client = anthropicVertex(h.url);
  const base = { max_tokens: 100, messages: [{ role: "user" as const, content: USER }] };
  try {
    for (const p of PROVIDERS) {
      for (const stream of [false, true]) {
        const how = stream ? "stream" : "create";
        await step(t, h, `${p.label} ${how}: text`, async () => {
          const m = upstreamMark(h);
          const message = await create(client, stream, { ...base, model: model(p, "text") });
          assert.equal(textOf(message), replyText(p));
          assert.equal(message.stop_reason, "end_turn");
          const [sent] = m.landed(p, model(p, "text"));
          assert.ok(!JSON.stringify(sent.json).includes("vertex-2023-10-16"), "no Vertex field");
        });
        for (const scenario of TOOL_SCENARIOS) {
          await step(t, h, `${p.label} ${how}: ${scenario} round trip`, async () => {
            const m = upstreamMark(h);
            await claudeToolLoop(client, stream, model(p, scenario));
            m.landed(p, model(p, scenario), 2);
          });
        }
      }
    }
    await step(
      t,
      h,
      "messages: the SDK's dated version travels as Anthropic's header",
      async () => {
        await client.messages.create({ ...base, model: model(MESSAGES, "text") });
        const sent = h.upstream.requests.at(-1)!;
        // AnthropicVertex puts its `anthropic-version` header into the body; it goes back there.
        assert.equal(sent.headers["anthropic-version"], "2026-10-21");
        assert.equal(sent.json.anthropic_version, undefined);
      },
    );
    await step(t, h, "countTokens on a Claude route reaches the provider", async () => {
      const before = h.upstream.requests.length;
      const counted = await client.messages.countTokens({ ...base, model: "msg-text" });
      assert.ok(counted.input_tokens > 0);
      const sent = h.upstream.requests.slice(before);
      assert.deepEqual(sent.map((r) => r.path), ["/v1/messages/count_tokens"]);
      assert.equal(sent[0].json.model, "msg-text");
    });
    await step(t, h, "countTokens elsewhere: a 400 in Vertex's envelope", async () => {
      const before = h.upstream.requests.length;
      const e = await rejection(() => client.messages.countTokens({ ...base, model: "gem-text" }));
      assertErrorStatus(e, AnthropicVertex.BadRequestError, 400);
      const { error } = (e as { error: { error: Record<string, unknown> } }).error;
      assert.equal(error.status, "INVALID_ARGUMENT");
      assert.match(String(error.message), /token counting requires/);
      assert.equal(h.upstream.requests.length, before, "no provider call");
    });
    await step(t, h, "a wrong token: 401 in Vertex's envelope, no provider call", async () => {
      const before = h.upstream.requests.length;
      const e = await rejection(() =>
        anthropicVertex(h.url, "not-a-key").messages.create({ ...base, model: "msg-text" })
      );
      assertErrorStatus(e, AnthropicVertex.AuthenticationError, 401);
      const { error } = (e as { error: { error: Record<string, unknown> } }).error;
      assert.equal(error.status, "UNAUTHENTICATED");
      assert.equal(h.upstream.requests.length, before);
    });
  } finally {
    await h.close();
  }
});

Deno.test({
  name:
    "vertex clients: @google/genai in Vertex mode on a route of each family: JSON, stream, tools",
  // js-genai does not cancel a response body it stopped reading after an error (as sdk/genai.ts).
  sanitizeResources: false,
}, async (t) => {
  const h: Harness = await startHarness();
  const ai = genaiVertex(h.url);
  try {
    for (const p of PROVIDERS) {
      for (const stream of [false, true]) {
        const how = stream ? "generateContentStream" : "generateContent";
        await step(t, h, `${p.label} ${how}: text`, async () => {
          const m = upstreamMark(h);
          const contents = [{ role: "user", parts: [{ text: USER }] }];
          const r = await generate(ai, stream, model(p, "text"), contents);
          assert.equal(r.text, replyText(p));
          m.landed(p, model(p, "text"));
        });
        for (const scenario of TOOL_SCENARIOS) {
          await step(t, h, `${p.label} ${how}: ${scenario} round trip`, async () => {
            const m = upstreamMark(h);
            await geminiToolLoop(ai, stream, model(p, scenario));
            m.landed(p, model(p, scenario), 2);
          });
        }
      }
    }
    const sent = h.logs.filter((l) => String(l.path).startsWith("/v1beta1/projects/"));
    assert.ok(sent.length > 0, "genai called Vertex's v1beta1 paths");
    await step(t, h, "a wrong token: the SDK's ApiError 401, no provider call", async () => {
      const before = h.upstream.requests.length;
      const e = await rejection(() =>
        genaiVertex(h.url, "not-a-key").models.generateContent({
          model: "gem-text",
          contents: USER,
        })
      );
      assert.equal((e as { status?: number }).status, 401);
      assert.match(String((e as Error).message), /"status":"UNAUTHENTICATED"/);
      assert.equal(h.upstream.requests.length, before);
    });
  } finally {
    await h.close();
  }
});

Deno.test("vertex clients: on Vertex's own routes they are relayed, with the gateway's minted token", async (t) => {
  const h = await startVertexGateway();
  const claude = anthropicVertex(h.url);
  const ai = genaiVertex(h.url);
  const base = { max_tokens: 100, messages: [{ role: "user" as const, content: USER }] };
  const last = () => modelCalls(h.vertex).at(-1)!;
  try {
    for (const stream of [false, true]) {
      await t.step(
        `AnthropicVertex → Vertex Claude (${stream ? "stream" : "create"})`,
        async () => {
          const message = await create(claude, stream, { ...base, model: "vc-text" });
          assert.match(textOf(message), new RegExp(USER));
          const sent = last();
          assert.equal(
            sent.path,
            `${CLAUDE_AT}/vc-text:${stream ? "streamRawPredict" : "rawPredict"}`,
          );
          assert.match(sent.headers.authorization!, /^Bearer ya29\.mock-/);
          // The body as the SDK wrote it for Vertex (its version included), the model in the URL.
          assert.equal(sent.json.anthropic_version, "2026-10-21");
          assert.equal(sent.json.model, undefined);
          await claudeToolLoop(claude, stream, "vc-think-tool");
        },
      );
      await t.step(`genai → Vertex Gemini (${stream ? "stream" : "JSON"})`, async () => {
        const r = await generate(ai, stream, "vg-text", [{
          role: "user",
          parts: [{ text: USER }],
        }]);
        assert.match(r.text, new RegExp(USER));
        const sent = last();
        const action = stream ? "streamGenerateContent?alt=sse" : "generateContent";
        assert.equal(sent.path + sent.search, `${GEMINI_AT}/vg-text:${action}`);
        assert.ok(!JSON.stringify(sent.headers).includes(KEY), "the client's key stays here");
        await geminiToolLoop(ai, stream, "vg-think-tool");
      });
    }
    const counted = await claude.messages.countTokens({ ...base, model: "vc-text" });
    assert.ok(counted.input_tokens > 0);
    assert.equal(last().path, `${CLAUDE_AT}/count-tokens:rawPredict`);
    assert.equal(last().json.model, "vc-text");
    const vertexLines = h.logs.filter((l) => String(l.path).includes("/publishers/"));
    assert.ok(vertexLines.length >= 13, `${vertexLines.length} Vertex client calls logged`);
    assert.ok(vertexLines.every((l) => l.passthrough === true), "every one relayed");
    assert.match(h.gw.metrics.expose(), /gen_ai_provider_name="gcp\.vertex_ai"/);
  } finally {
    await h.close();
  }
});
