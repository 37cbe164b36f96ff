/**
 * One Claude route over the three places that sell Anthropic's models: Anthropic's own API (the
 * vendor mock), Amazon Bedrock's InvokeModel (tests/mock/bedrock.ts, every call's SigV4 checked)
 * and Vertex AI's rawPredict (tests/mock/vertex.ts, only tokens it minted accepted). A Claude
 * Code-style conversation with thinking continues across them: the signature Anthropic wrote
 * reaches Vertex unchanged after Anthropic is overloaded and Bedrock throttles, JSON and streamed.
 * Once content has reached the client, a cut Bedrock event stream or Vertex SSE stream ends with
 * the messages dialect's interruption, never a failover.
 */
import assert from "node:assert/strict";
import { anthropicHeaders, KEY, post } from "./helpers.ts";
import { startMockBedrock } from "./mock/bedrock.ts";
import { pieces, signature } from "./mock/scenario.ts";
import type { MockUpstream } from "./mock/upstream.ts";
import { bedrockProvider, sseEvents } from "./platform_harness.ts";
import { Anthropic } from "./sdk/deps.ts";
import { CLAUDE_AT, modelCalls, startVertexGateway, type VertexHarness } from "./vertex_harness.ts";

/** Vertex's Claude model (a dated Vertex id); the mock signs its thinking with this name. */
const VERTEX_MODEL = "claude-think@20250929";

interface ChainHarness extends VertexHarness {
  bedrock: MockUpstream;
}

/**
 * The three Claude targets in order, with their upstream models (Anthropic's, when left out, is
 * the requested one).
 */
const claudeTargets = (models: { anthropic?: string; bedrock: string; vertex: string }) => [
  { provider: "anthropic", ...models.anthropic && { model: models.anthropic } },
  { provider: "bedrock-claude", model: models.bedrock },
  { provider: "vertex-claude", model: models.vertex },
];

/**
 * A gateway with the providers `anthropic`, `bedrock-claude` (InvokeModel, SigV4),
 * `vertex-claude` and `vertex-gemini`, and `routes`; the mocks read their scenario from the
 * upstream model names.
 */
async function startChains(routes: Record<string, unknown>[]): Promise<ChainHarness> {
  const bedrock = await startMockBedrock();
  const h = await startVertexGateway({
    providers: [bedrockProvider("bedrock-claude", bedrock.url)],
    routes,
  });
  return {
    ...h,
    bedrock,
    async close() {
      await h.close();
      await bedrock.close();
    },
  };
}

/** The paths each upstream was called at, in order (Vertex's token endpoint left out). */
const calls = (h: ChainHarness) => ({
  anthropic: h.direct.requests.map((r) => r.path),
  bedrock: h.bedrock.requests.map((r) => r.path),
  vertex: modelCalls(h.vertex).map((r) => r.path),
});

/** A Claude Code-style request: system prompt, a tool, thinking on, the conversation so far. */
const claudeCode = (model: string, messages: unknown[], stream = false) => ({
  model,
  max_tokens: 32000,
  stream,
  system: [{ type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } }],
  tools: [{
    name: "Bash",
    description: "Runs a shell command.",
    input_schema: { type: "object", properties: { command: { type: "string" } } },
  }],
  thinking: { type: "enabled", budget_tokens: 1024 },
  messages,
});

type Block = { type: string; signature?: string };
const thinkingOf = (content: Block[]) => content.find((b) => b.type === "thinking");

Deno.test("platform chain: a thinking signature from Anthropic reaches Vertex Claude after Anthropic is overloaded and Bedrock throttles", async (t) => {
  // Anthropic gets the requested name: `chain-think` answers there, and the second turn asks for
  // `chain-think-err529` so that Anthropic is overloaded. Vertex Gemini, another family, sits
  // before Vertex Claude: skipped (no attempt), as the three Claude platforms are one family.
  const [anthropic, bedrock, vertex] = claudeTargets({
    bedrock: "claude-err429",
    vertex: VERTEX_MODEL,
  });
  const h = await startChains([
    {
      models: ["chain-*"],
      targets: [anthropic, bedrock, { provider: "vertex-gemini", model: "vg-text" }, vertex],
    },
    // Bedrock throttles inside a 200 event stream instead, before any content.
    {
      models: ["early-*"],
      targets: claudeTargets({ bedrock: "claude-earlyerr", vertex: VERTEX_MODEL }),
    },
  ]);
  const messages = (body: unknown) => post(`${h.url}/v1/messages`, anthropicHeaders(), body);
  try {
    const first = await messages(claudeCode("chain-think", [{ role: "user", content: "hi" }]));
    const answer = await first.json();
    assert.equal(first.status, 200, JSON.stringify(answer));
    assert.equal(first.headers.get("x-gateway-provider"), "anthropic");
    const signed = thinkingOf(answer.content)!.signature!;
    assert.equal(signed, signature("thinking", "chain-think"));
    const history = [
      { role: "user", content: "hi" },
      { role: "assistant", content: answer.content },
      { role: "user", content: "and then?" },
    ];
    const carried = JSON.stringify(answer.content);
    /** The assistant turn in an upstream's body, and whether the client's bytes of it are there. */
    const assistantTurn = (sent: { body: string; json?: Record<string, unknown> }) => ({
      content: (sent.json!.messages as { content: unknown }[])[1].content,
      verbatim: sent.body.includes(carried),
    });

    await t.step("JSON: Vertex answers with the signature Anthropic wrote", async () => {
      const res = await messages(claudeCode("chain-think-err529", history));
      const reply = await res.json();
      assert.equal(res.status, 200, JSON.stringify(reply));
      assert.equal(res.headers.get("x-gateway-provider"), "vertex-claude");
      assert.equal(res.headers.get("x-gateway-attempts"), "3");
      assert.deepEqual(calls(h), {
        anthropic: ["/v1/messages", "/v1/messages"],
        bedrock: ["/model/claude-err429/invoke"],
        vertex: [`${CLAUDE_AT}/${VERTEX_MODEL}:rawPredict`],
      });
      // Every target was sent the signed turn as the client wrote it.
      for (const sent of [h.direct.requests[1], h.bedrock.requests[0], modelCalls(h.vertex)[0]]) {
        assert.deepEqual(assistantTurn(sent), { content: answer.content, verbatim: true });
      }
      // Vertex's own answer: the model it ran and the signature it wrote.
      assert.equal(reply.model, VERTEX_MODEL);
      assert.equal(thinkingOf(reply.content)!.signature, signature("thinking", VERTEX_MODEL));
      assert.match(reply.content.at(-1).text, /^Hello from messages mock: and then\?$/);
      const log = h.logs.at(-1)!;
      assert.equal(log.provider, "vertex-claude");
      assert.equal(log.attempts, 3);
    });

    await t.step(
      "stream through the Anthropic SDK: the same chain, the same signature",
      async () => {
        const client = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
        const stream = client.messages.stream(
          claudeCode("chain-think-err529", history) as unknown as Anthropic.MessageCreateParams,
        );
        const { response } = await stream.withResponse();
        const reply = await stream.finalMessage();
        assert.equal(response.headers.get("x-gateway-provider"), "vertex-claude");
        assert.equal(response.headers.get("x-gateway-attempts"), "3");
        assert.deepEqual(calls(h), {
          anthropic: ["/v1/messages", "/v1/messages", "/v1/messages"],
          bedrock: [
            "/model/claude-err429/invoke",
            "/model/claude-err429/invoke-with-response-stream",
          ],
          vertex: [
            `${CLAUDE_AT}/${VERTEX_MODEL}:rawPredict`,
            `${CLAUDE_AT}/${VERTEX_MODEL}:streamRawPredict`,
          ],
        });
        const sent = modelCalls(h.vertex).at(-1)!;
        assert.deepEqual(assistantTurn(sent), { content: answer.content, verbatim: true });
        assert.equal(reply.model, VERTEX_MODEL);
        assert.equal(thinkingOf(reply.content)!.signature, signature("thinking", VERTEX_MODEL));
        assert.equal(reply.stop_reason, "end_turn");
      },
    );

    // Anthropic's third failure in a row (the last this gateway sees: it then cools down).
    await t.step(
      "stream: a throttlingException frame before content fails over like a 429",
      async () => {
        const res = await messages(claudeCode("early-think-err529", history, true));
        const text = await res.text();
        assert.equal(res.status, 200, text);
        assert.equal(res.headers.get("x-gateway-provider"), "vertex-claude");
        assert.equal(res.headers.get("x-gateway-attempts"), "3");
        const { anthropic, bedrock, vertex } = calls(h);
        assert.deepEqual([anthropic.length, bedrock.length, vertex.length], [4, 3, 3]);
        assert.equal(bedrock.at(-1), "/model/claude-earlyerr/invoke-with-response-stream");
        const sent = modelCalls(h.vertex).at(-1)!;
        assert.equal(sent.path, `${CLAUDE_AT}/${VERTEX_MODEL}:streamRawPredict`);
        assert.deepEqual(assistantTurn(sent), { content: answer.content, verbatim: true });
        // Nothing of Bedrock's opening reached the client: one message, Vertex's, whole.
        const events = sseEvents(text);
        const starts = events.filter((e) => e.type === "message_start");
        assert.deepEqual(starts.map((e) => (e.message as { model: string }).model), [VERTEX_MODEL]);
        assert.equal(events.at(-1)!.type, "message_stop");
      },
    );
  } finally {
    await h.close();
  }
});

/** The messages dialect's interruption ending for a connection reset, the stream's last bytes. */
const INTERRUPTED = "event: error\n" +
  'data: {"type":"upstream_interrupted","error":{"type":"upstream_interrupted",' +
  '"message":"the upstream connection failed mid-stream"}}\n\ndata: [DONE]\n\n';

Deno.test("platform chain: a Bedrock event stream or Vertex SSE stream cut after content ends with the interruption, no failover", async (t) => {
  const h = await startChains([
    // Bedrock resets the connection inside an event-stream frame, after two text deltas.
    {
      models: ["cut-bedrock"],
      targets: claudeTargets({
        anthropic: "msg-err529",
        bedrock: "claude-cutmid",
        vertex: VERTEX_MODEL,
      }),
    },
    // Vertex, the last target, resets between SSE events after two text deltas.
    {
      models: ["cut-vertex"],
      targets: claudeTargets({
        anthropic: "msg-err529",
        bedrock: "claude-err429",
        vertex: "claude-cut@20250929",
      }),
    },
  ]);
  const conversation = [
    { role: "user", content: "hi" },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "A greeting.", signature: signature("thinking", "x") },
        { type: "text", text: "Hello." },
      ],
    },
    { role: "user", content: "and then?" },
  ];
  /** The text deltas sent before the cut: two of the answer's three. */
  const beforeCut = pieces("Hello from messages mock: and then?", 3).slice(0, 2);
  /** Streams `model`: the response and the text deltas the client got. */
  const cutStream = async (model: string) => {
    const res = await post(
      `${h.url}/v1/messages`,
      anthropicHeaders(),
      claudeCode(model, conversation, true),
    );
    const text = await res.text();
    assert.equal(res.status, 200, text);
    const events = sseEvents(text);
    const deltas = events.filter((e) => e.type === "content_block_delta")
      .map((e) => (e.delta as { text: string }).text);
    assert.ok(!events.some((e) => e.type === "message_stop"), text);
    assert.ok(text.endsWith(INTERRUPTED), text);
    return { res, deltas };
  };
  try {
    await t.step(
      "Bedrock cut mid-frame: the client keeps what came, Vertex is not tried",
      async () => {
        const { res, deltas } = await cutStream("cut-bedrock");
        assert.equal(res.headers.get("x-gateway-provider"), "bedrock-claude");
        assert.equal(res.headers.get("x-gateway-attempts"), "2");
        assert.deepEqual(deltas, beforeCut);
        assert.deepEqual(calls(h), {
          anthropic: ["/v1/messages"],
          bedrock: ["/model/claude-cutmid/invoke-with-response-stream"],
          vertex: [],
        });
      },
    );

    await t.step("Vertex cut between events: the interruption in the same framing", async () => {
      const { res, deltas } = await cutStream("cut-vertex");
      assert.equal(res.headers.get("x-gateway-provider"), "vertex-claude");
      assert.equal(res.headers.get("x-gateway-attempts"), "3");
      assert.deepEqual(deltas, beforeCut);
      assert.deepEqual(calls(h), {
        anthropic: ["/v1/messages", "/v1/messages"],
        bedrock: [
          "/model/claude-cutmid/invoke-with-response-stream",
          "/model/claude-err429/invoke-with-response-stream",
        ],
        vertex: [`${CLAUDE_AT}/claude-cut@20250929:streamRawPredict`],
      });
    });
  } finally {
    await h.close();
  }
});
