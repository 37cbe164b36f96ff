/**
 * The published AWS clients aimed at the gateway with only an endpoint override and the gateway
 * key as their credential (docs/cloud-clients.md): `@aws-sdk/client-bedrock-runtime`'s Converse,
 * ConverseStream, InvokeModel, InvokeModelWithResponseStream and CountTokens commands (HTTP/2
 * cleartext, SigV4 over `:authority`, or the key as a Bedrock API key), and
 * `@anthropic-ai/bedrock-sdk`'s create and stream (SigV4 or the key), on routes of each family
 * (Claude on Anthropic and on Bedrock, GPT, Gemini), text and tool calls, JSON and streams.
 */
import assert from "node:assert/strict";
import {
  AnthropicBedrock,
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  CountTokensCommand,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
} from "./sdk/platforms.ts";
import { LOOP_TOOL } from "./requests.ts";
import { KEY, startBedrockClientHarness } from "./bedrock_client_harness.ts";

const QUESTION = "What is the weather in Paris?";
const RESULT = "18C and sunny";

/** Routes of each family: the model prefix and the mock vendor whose text answers. */
const ROUTES = [
  ["msg", "messages"],
  ["bi", "messages"],
  ["chat", "chat"],
  ["gem", "generate-content"],
] as const;

const awsClients = (url: string) => ({
  sigv4: new BedrockRuntimeClient({
    endpoint: url,
    region: "eu-central-1",
    credentials: { accessKeyId: "team-a", secretAccessKey: KEY },
    maxAttempts: 1,
  }),
  bearer: new BedrockRuntimeClient({
    endpoint: url,
    region: "us-east-1",
    token: { token: KEY },
    authSchemePreference: ["httpBearerAuth"],
    maxAttempts: 1,
  }),
});

const converseTools = {
  tools: [{
    toolSpec: {
      name: LOOP_TOOL.name,
      description: LOOP_TOOL.description,
      inputSchema: { json: LOOP_TOOL.parameters },
    },
  }],
};

/** An InvokeModel body, Claude's on Bedrock. */
const invokeBody = (tools = false) =>
  JSON.stringify({
    anthropic_version: "bedrock-2023-05-31",
    max_tokens: 256,
    messages: [{ role: "user", content: QUESTION }],
    ...(tools && { tools: [{ name: LOOP_TOOL.name, input_schema: LOOP_TOOL.parameters }] }),
  });

const decoder = new TextDecoder();
const encoder = new TextEncoder();

Deno.test("@aws-sdk/client-bedrock-runtime through the gateway: every command, every family", async (t) => {
  const h = await startBedrockClientHarness();
  const clients = awsClients(h.url);
  try {
    for (const [auth, client] of Object.entries(clients)) {
      for (const [prefix, vendor] of ROUTES) {
        await t.step(`${auth} ${prefix}: ConverseCommand, a tool loop`, async () => {
          const modelId = `${prefix}-tool`;
          const user = { role: "user" as const, content: [{ text: QUESTION }] };
          const first = await client.send(
            new ConverseCommand({ modelId, messages: [user], toolConfig: converseTools }),
          );
          assert.equal(first.stopReason, "tool_use");
          const answer = first.output!.message!;
          const use = answer.content!.find((b) => b.toolUse)!.toolUse!;
          assert.equal(use.name, LOOP_TOOL.name);
          assert.deepEqual(use.input, { city: "Paris" });
          const second = await client.send(
            new ConverseCommand({
              modelId,
              toolConfig: converseTools,
              messages: [user, answer, {
                role: "user",
                content: [{
                  toolResult: { toolUseId: use.toolUseId, content: [{ text: RESULT }] },
                }],
              }],
            }),
          );
          assert.equal(second.output!.message!.content![0].text, `Tool said: ${RESULT}`);
          assert.ok(second.usage!.inputTokens! > 0);
        });

        await t.step(`${auth} ${prefix}: ConverseStreamCommand`, async () => {
          const res = await client.send(
            new ConverseStreamCommand({
              modelId: `${prefix}-text`,
              messages: [{ role: "user", content: [{ text: QUESTION }] }],
            }),
          );
          let text = "";
          let stop = "";
          let output = 0;
          for await (const e of res.stream!) {
            text += e.contentBlockDelta?.delta?.text ?? "";
            stop ||= e.messageStop?.stopReason ?? "";
            output ||= e.metadata?.usage?.outputTokens ?? 0;
          }
          assert.equal(text, `Hello from ${vendor} mock: ${QUESTION}`);
          assert.equal(stop, "end_turn");
          assert.ok(output > 0);
          // A tool call, streamed: its name first, its input in deltas.
          const tool = await client.send(
            new ConverseStreamCommand({
              modelId: `${prefix}-tool`,
              messages: [{ role: "user", content: [{ text: QUESTION }] }],
              toolConfig: converseTools,
            }),
          );
          let name = "";
          let input = "";
          for await (const e of tool.stream!) {
            name ||= e.contentBlockStart?.start?.toolUse?.name ?? "";
            input += e.contentBlockDelta?.delta?.toolUse?.input ?? "";
          }
          assert.equal(name, LOOP_TOOL.name);
          assert.deepEqual(JSON.parse(input), { city: "Paris" });
        });

        await t.step(`${auth} ${prefix}: InvokeModelCommand, a tool call`, async () => {
          const res = await client.send(
            new InvokeModelCommand({
              modelId: `${prefix}-tool`,
              contentType: "application/json",
              body: invokeBody(true),
            }),
          );
          const message = JSON.parse(decoder.decode(res.body));
          assert.equal(message.stop_reason, "tool_use");
          const use = message.content.find((b: { type: string }) => b.type === "tool_use");
          assert.deepEqual(use.input, { city: "Paris" });
        });

        await t.step(`${auth} ${prefix}: InvokeModelWithResponseStreamCommand`, async () => {
          const res = await client.send(
            new InvokeModelWithResponseStreamCommand({
              modelId: `${prefix}-text`,
              contentType: "application/json",
              body: invokeBody(),
            }),
          );
          const events: Record<string, unknown>[] = [];
          for await (const e of res.body!) {
            if (e.chunk?.bytes) events.push(JSON.parse(decoder.decode(e.chunk.bytes)));
          }
          const text = events.flatMap((e) =>
            e.type === "content_block_delta" ? [(e.delta as { text: string }).text] : []
          ).join("");
          assert.equal(text, `Hello from ${vendor} mock: ${QUESTION}`);
          assert.ok(events.at(-1)!["amazon-bedrock-invocationMetrics"]);
          const tool = await client.send(
            new InvokeModelWithResponseStreamCommand({
              modelId: `${prefix}-tool`,
              contentType: "application/json",
              body: invokeBody(true),
            }),
          );
          const json: string[] = [];
          for await (const e of tool.body!) {
            const event = e.chunk?.bytes && JSON.parse(decoder.decode(e.chunk.bytes));
            if (event?.delta?.type === "input_json_delta") json.push(event.delta.partial_json);
          }
          assert.deepEqual(JSON.parse(json.join("")), { city: "Paris" });
        });
      }

      await t.step(`${auth}: CountTokensCommand, both inputs, on a Claude route`, async () => {
        const invoke = await client.send(
          new CountTokensCommand({
            modelId: "msg-text",
            input: { invokeModel: { body: encoder.encode(invokeBody()) } },
          }),
        );
        assert.ok(invoke.inputTokens! > 0);
        const converse = await client.send(
          new CountTokensCommand({
            modelId: "bi-text",
            input: {
              converse: { messages: [{ role: "user", content: [{ text: QUESTION }] }] },
            },
          }),
        );
        assert.ok(converse.inputTokens! > 0);
      });
    }

    await t.step("the SigV4 client spoke HTTP/2: its signature covered :authority", () => {
      const signed = h.received.filter((r) => r.authorization.startsWith("AWS4-HMAC-SHA256"));
      assert.ok(signed.length > 0);
      assert.ok(signed.every((r) => !r.host), "no Host header: HTTP/2");
      assert.ok(signed.every((r) => /SignedHeaders=[^,]*:authority/.test(r.authorization)));
    });

    await t.step(
      "a wrong secret: the SDK raises Bedrock's exception, nothing went upstream",
      async () => {
        const before = h.calls();
        const wrong = new BedrockRuntimeClient({
          endpoint: h.url,
          region: "us-east-1",
          credentials: { accessKeyId: "team-a", secretAccessKey: "sk-not-the-key" },
          maxAttempts: 1,
        });
        await assert.rejects(
          wrong.send(
            new ConverseCommand({
              modelId: "msg-text",
              messages: [{ role: "user", content: [{ text: "hi" }] }],
            }),
          ),
          (e: Error & { $metadata?: { httpStatusCode?: number } }) => {
            assert.equal(e.name, "InvalidSignatureException");
            assert.equal(e.$metadata?.httpStatusCode, 403);
            return true;
          },
        );
        wrong.destroy();
        assert.equal(h.calls(), before);
      },
    );
  } finally {
    for (const client of Object.values(clients)) client.destroy();
    await h.close();
  }
});

/** A Claude-shaped body; the Anthropic Bedrock SDK moves model and stream into the path. */
const ask = (model: string) => ({
  model,
  max_tokens: 256,
  messages: [{ role: "user" as const, content: QUESTION }],
  tools: [{ name: LOOP_TOOL.name, input_schema: LOOP_TOOL.parameters as never }],
});

Deno.test("@anthropic-ai/bedrock-sdk through the gateway: create and stream, every family", async (t) => {
  const h = await startBedrockClientHarness();
  const clients = {
    bearer: new AnthropicBedrock({ baseURL: h.url, apiKey: KEY, awsRegion: "us-east-1" }),
    sigv4: new AnthropicBedrock({
      baseURL: h.url,
      awsAccessKey: "team-a",
      awsSecretKey: KEY,
      awsRegion: "us-west-2",
    }),
  };
  try {
    for (const [auth, client] of Object.entries(clients)) {
      for (const [prefix, vendor] of ROUTES) {
        await t.step(`${auth} ${prefix}: messages.create, a tool loop`, async () => {
          const model = `${prefix}-tool`;
          const first = await client.messages.create(ask(model));
          assert.equal(first.stop_reason, "tool_use");
          const use = first.content.find((b) => b.type === "tool_use")!;
          assert.equal(use.type === "tool_use" && use.name, LOOP_TOOL.name);
          const second = await client.messages.create({
            ...ask(model),
            messages: [
              ...ask(model).messages,
              { role: "assistant", content: first.content },
              {
                role: "user",
                content: [{ type: "tool_result", tool_use_id: use.id, content: RESULT }],
              },
            ],
          });
          const text = second.content.find((b) => b.type === "text");
          assert.equal(text?.type === "text" && text.text, `Tool said: ${RESULT}`);
        });

        await t.step(`${auth} ${prefix}: messages.stream`, async () => {
          const stream = client.messages.stream({
            model: `${prefix}-text`,
            max_tokens: 256,
            messages: [{ role: "user", content: QUESTION }],
          });
          const message = await stream.finalMessage();
          const text = message.content[0];
          assert.equal(text.type === "text" && text.text, `Hello from ${vendor} mock: ${QUESTION}`);
          assert.ok(message.usage.output_tokens > 0);
          const tool = await client.messages.stream(ask(`${prefix}-tool`)).finalMessage();
          const use = tool.content.find((b) => b.type === "tool_use");
          assert.deepEqual(use?.type === "tool_use" && use.input, { city: "Paris" });
        });
      }
    }
    const paths = h.received.map((r) => r.path);
    assert.ok(paths.includes("/model/chat-text/invoke-with-response-stream"));
    assert.ok(paths.includes("/model/gem-tool/invoke"));
  } finally {
    await h.close();
  }
});
