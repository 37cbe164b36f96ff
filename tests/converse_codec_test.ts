/**
 * The Bedrock Converse codec and its event-stream framing (plugins/converse/), against the
 * loopback Bedrock (tests/mock/bedrock.ts, proven by the AWS SDK in platform_mocks_test.ts):
 * requests the codec encodes are sent to it, and its JSON answers and binary ConverseStream
 * frames are decoded back, split at every byte boundary the network might cut them at.
 */
import assert from "node:assert/strict";
import type * as ir from "../src/kit/ir.ts";
import type { EncodeContext } from "../src/kit/codec.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import { converseCodec } from "../plugins/converse/codec.ts";
import { converseFraming, EVENT_STREAM_TYPE } from "../plugins/converse/framing.ts";
import { startMockBedrock } from "./mock/bedrock.ts";
import { TOKENS } from "./mock/upstream.ts";
import { pipe, rejects } from "./codec_helpers.ts";

const API_KEY = "bedrock-api-key-for-codec-tests";
const CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const DECODE = { now: 1700000000, id: "gwtest" };
const USER = "What is the weather like?";

const encodeCtx = (model: string, dropped: string[] = []): EncodeContext => ({
  model,
  route: `"m" → bedrock (converse)`,
  defaultMaxTokens: 4096,
  dropped,
});

const request = (over: Partial<ir.Request> = {}): ir.Request => ({
  model: "m",
  system: [],
  messages: [{ role: "user", parts: [{ type: "text", text: USER }] }],
  stream: false,
  ...over,
});

const WEATHER: ir.Tool = {
  name: "get_weather",
  description: "Weather of a city",
  parameters: { type: "object", properties: { city: { type: "string" } } },
};

/** Sends `req` encoded for `model` to the mock Bedrock and returns the raw response. */
async function converse(url: string, model: string, req: ir.Request): Promise<Response> {
  const body = converseCodec.encodeRequest(req, encodeCtx(model));
  return await fetch(url + converseCodec.path(model, req.stream), {
    method: "POST",
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Frames of `bytes` as the framing divides them when they arrive `size` bytes at a time. */
async function scanInChunks(bytes: Uint8Array, size: number) {
  const framing = converseFraming();
  await framing.ready;
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let held = new Uint8Array(0);
  for (let at = 0; at < bytes.length; at += size) {
    const chunk = bytes.subarray(at, at + size);
    const buf = new Uint8Array(held.length + chunk.length);
    buf.set(held);
    buf.set(chunk, held.length);
    const scan = framing.scan(buf, held.length, (b) => decoder.decode(b));
    assert.equal(scan.malformed, undefined);
    events.push(...scan.events);
    held = buf.slice(scan.cut);
  }
  assert.equal(held.length, 0, "no bytes left over after the last frame");
  return events;
}

/** A ConverseStream from the mock, through the framing (1-byte and 7-byte chunks) and decoder. */
async function streamIr(url: string, model: string, req: ir.Request): Promise<ir.StreamEvent[]> {
  const res = await converse(url, model, { ...req, stream: true });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), EVENT_STREAM_TYPE);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const events = await scanInChunks(bytes, 7);
  assert.deepEqual(await scanInChunks(bytes, 1), events);
  return await pipe(events, converseCodec.decodeStream(DECODE));
}

async function withMock(test: (url: string) => Promise<void>) {
  const mock = await startMockBedrock({ apiKey: API_KEY });
  try {
    await test(mock.url);
  } finally {
    await mock.close();
  }
}

/** The IR parts a stream's events build, and its finish event. */
function assemble(events: ir.StreamEvent[]) {
  const parts: Record<string, unknown>[] = [];
  for (const e of events) {
    if (e.type === "part_start") parts[e.index] = { ...e.part, text: "", arguments: "" };
    if (e.type === "text_delta" || e.type === "thinking_delta") parts[e.index].text += e.text;
    if (e.type === "arguments_delta") parts[e.index].arguments += e.json;
    if (e.type === "signature") parts[e.index].signature = e.signature;
  }
  return { parts, finish: events.find((e) => e.type === "finish") };
}

const USAGE: ir.Usage = {
  inputTokens: TOKENS.input,
  outputTokens: TOKENS.text,
  cacheReadTokens: TOKENS.cacheRead,
  cacheWriteTokens: TOKENS.cacheWrite,
};

Deno.test("converse: a text answer, JSON and stream, with usage (inputTokens excludes the cache)", () =>
  withMock(async (url) => {
    const res = await converse(url, CLAUDE, request());
    assert.equal(res.status, 200);
    const out = converseCodec.decodeResponse(await res.json(), DECODE);
    assert.deepEqual(out.parts, [{ type: "text", text: `Hello from converse mock: ${USER}` }]);
    assert.equal(out.finish, "stop");
    assert.deepEqual(out.usage, USAGE);

    const events = await streamIr(url, CLAUDE, request());
    assert.deepEqual(events[0], { type: "start", id: "gwtest", model: "", created: DECODE.now });
    const { parts, finish } = assemble(events);
    assert.equal(parts[0].text, `Hello from converse mock: ${USER}`);
    assert.deepEqual(finish, { type: "finish", reason: "stop", usage: USAGE });
    assert.equal(events.at(-1)?.type, "finish", "finish comes last, with the metadata event");
  }));

Deno.test("converse: reasoning with its signature and a tool call, JSON and stream; the result goes back", () =>
  withMock(async (url) => {
    const model = "anthropic.claude-think-tool";
    const req = request({ tools: [WEATHER], reasoning: { budgetTokens: 2048 } });
    const json = converseCodec.decodeResponse(
      await (await converse(url, model, req)).json(),
      DECODE,
    );
    const [thinking, call] = json.parts as [ir.ThinkingPart, ir.ToolCallPart];
    assert.equal(thinking.type, "thinking");
    assert.match(thinking.text, /A short answer will do/);
    assert.equal(thinking.signature?.family, "converse");
    assert.equal(call.name, "get_weather");
    assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });
    assert.equal(json.finish, "tool_calls");

    const { parts, finish } = assemble(await streamIr(url, model, req));
    assert.equal(parts[0].type, "thinking");
    assert.equal(parts[0].text, thinking.text);
    assert.deepEqual(parts[0].signature, thinking.signature);
    assert.equal(parts[1].type, "tool_call");
    assert.equal(parts[1].name, "get_weather");
    assert.deepEqual(JSON.parse(parts[1].arguments as string), { city: "Paris" });
    assert.equal(finish?.type === "finish" && finish.reason, "tool_calls");

    // The tool loop: the signed reasoning and the call go back with the result.
    const loop = request({
      tools: [WEATHER],
      reasoning: { budgetTokens: 2048 },
      messages: [
        ...req.messages,
        { role: "assistant", parts: [thinking, call] },
        {
          role: "tool",
          parts: [{
            type: "tool_result",
            callId: call.id,
            content: [{ type: "text", text: "sunny" }],
          }],
        },
      ],
    });
    const body = converseCodec.encodeRequest(loop, encodeCtx(model));
    const assistant = (body.messages as Record<string, unknown>[])[1];
    assert.deepEqual(assistant.content, [
      {
        reasoningContent: {
          reasoningText: { text: thinking.text, signature: thinking.signature!.value },
        },
      },
      { toolUse: { toolUseId: call.id, name: "get_weather", input: { city: "Paris" } } },
    ]);
    assert.deepEqual(body.additionalModelRequestFields, {
      thinking: { type: "enabled", budget_tokens: 2048 },
    });
    const answer = converseCodec.decodeResponse(
      await (await converse(url, model, loop)).json(),
      DECODE,
    );
    assert.deepEqual(answer.parts.at(-1), { type: "text", text: "Tool said: sunny" });
  }));

Deno.test("converse: Bedrock's stop reasons as they mean; one it adds later is an error, JSON and stream", () =>
  withMock(async (url) => {
    const reasons: [string, ir.FinishReason][] = [
      ["end_turn", "stop"],
      ["stop_sequence", "stop"],
      ["max_tokens", "length"],
      ["model_context_window_exceeded", "length"],
      ["guardrail_intervened", "content_filter"],
      ["content_filtered", "content_filter"],
      ["malformed_model_output", "error"],
      ["a_reason_added_later", "error"],
    ];
    for (const [reason, want] of reasons) {
      // The mock ends the answer with the stop reason its model name gives (`finishX`).
      const model = `anthropic.claude-finish${reason}`;
      const json = converseCodec.decodeResponse(
        await (await converse(url, model, request())).json(),
        DECODE,
      );
      assert.equal(json.finish, want, reason);
      const { finish } = assemble(await streamIr(url, model, request({ stream: true })));
      assert.equal(finish?.type === "finish" && finish.reason, want, reason);
    }
  }));

Deno.test("converse: a throttlingException frame before content is a rate_limit error; modelStreamErrorException after content is overloaded", () =>
  withMock(async (url) => {
    const early = await streamIr(url, "claude-earlyerr", request());
    const error = early.find((e) => e.type === "error");
    assert.deepEqual(error && { ...error, message: "" }, {
      type: "error",
      status: 429,
      kind: "rate_limit",
      message: "",
    });
    assert.ok(!early.some((e) => e.type === "text_delta"), "no content before the exception");

    const late = await streamIr(url, "claude-errevent", request());
    const at = late.findIndex((e) => e.type === "error");
    assert.ok(late.slice(0, at).some((e) => e.type === "text_delta"), "content came first");
    assert.equal(late[at].type === "error" && late[at].kind, "overloaded");
    assert.equal(late[at].type === "error" && late[at].status, 424);
    assert.ok(!late.some((e) => e.type === "finish"));
  }));

Deno.test("converse: a frame whose checksum fails is a malformed event; the frames before it are kept", () =>
  withMock(async (url) => {
    const res = await converse(url, CLAUDE, request({ stream: true }));
    const bytes = new Uint8Array(await res.arrayBuffer());
    const framing = converseFraming();
    await framing.ready;
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    assert.equal(framing.scan(bytes, 0, decode).malformed, undefined);
    const first = new DataView(bytes.buffer).getUint32(0);
    bytes[first + 20] ^= 0xff; // inside the second frame
    const scan = framing.scan(bytes, 0, decode);
    assert.deepEqual(scan.events.map((e) => e.event), ["messageStart"]);
    assert.deepEqual(scan.malformed, { at: 1, before: "" });
    assert.equal(scan.cut, bytes.length);
  }));

Deno.test("converse: the request body (system, sampling, stop, cache points, media, tool choice, JSON schema)", () => {
  const dropped: string[] = [];
  const body = converseCodec.encodeRequest(
    request({
      system: [{ type: "text", text: "Be brief.", cache: { ttl: "1h" } }],
      messages: [
        { role: "system", parts: [{ type: "text", text: "Mid-conversation rule." }] },
        {
          role: "user",
          parts: [
            { type: "text", text: "Look:" },
            { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBOR" } },
            {
              type: "document",
              source: { kind: "url", url: "s3://bucket/reports/q1.pdf" },
              filename: "q1 report (final).pdf",
            },
          ],
        },
      ],
      maxTokens: 300,
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      seed: 7,
      stop: ["END"],
      tools: [WEATHER],
      toolChoice: { type: "tool", name: "get_weather" },
      responseFormat: { type: "json_schema", name: "w", schema: { type: "object" } },
      metadata: { team: "a" },
      cache: {},
    }),
    encodeCtx(CLAUDE, dropped),
  );
  assert.deepEqual(body, {
    system: [
      { text: "Be brief." },
      { cachePoint: { type: "default", ttl: "1h" } },
      { text: "Mid-conversation rule." },
    ],
    messages: [{
      role: "user",
      content: [
        { text: "Look:" },
        { image: { format: "png", source: { bytes: "iVBOR" } } },
        {
          document: {
            format: "pdf",
            name: "q1 report (final)",
            source: { s3Location: { uri: "s3://bucket/reports/q1.pdf" } },
          },
        },
        { cachePoint: { type: "default" } },
      ],
    }],
    inferenceConfig: { maxTokens: 300, temperature: 0.2, topP: 0.9, stopSequences: ["END"] },
    additionalModelRequestFields: { top_k: 40 },
    outputConfig: {
      textFormat: {
        type: "json_schema",
        structure: { jsonSchema: { schema: '{"type":"object"}', name: "w" } },
      },
    },
    toolConfig: {
      tools: [{
        toolSpec: {
          name: "get_weather",
          description: "Weather of a city",
          inputSchema: { json: { type: "object", properties: { city: { type: "string" } } } },
        },
      }],
      toolChoice: { tool: { name: "get_weather" } },
    },
    requestMetadata: { team: "a" },
  });
  assert.deepEqual(dropped, ["seed"]);
});

Deno.test("converse: reasoning is Claude's thinking for Claude models, reported as dropped for others; other families' signatures stay home", () => {
  const foreign: ir.Message = {
    role: "assistant",
    parts: [
      { type: "thinking", text: "hmm", signature: { family: "anthropic", value: "sig-a" } },
      { type: "redacted_thinking", data: "opaque", family: "openai" },
      { type: "text", text: "Hi" },
    ],
  };
  const req = request({
    messages: [...request().messages, foreign, {
      role: "user",
      parts: [{ type: "text", text: "More" }],
    }],
    reasoning: { effort: "high" },
    temperature: 0.5,
  });
  const dropped: string[] = [];
  const claude = converseCodec.encodeRequest(req, encodeCtx(CLAUDE, dropped));
  assert.deepEqual((claude.messages as { content: unknown }[])[1].content, [{ text: "Hi" }]);
  assert.deepEqual(claude.additionalModelRequestFields, {
    thinking: { type: "enabled", budget_tokens: 16384 },
  });
  assert.deepEqual(claude.inferenceConfig, { maxTokens: 4096 + 16384 });
  assert.deepEqual(dropped, ["temperature"]);

  const adaptive = converseCodec.encodeRequest(
    request({ reasoning: { adaptive: true, effort: "max" } }),
    encodeCtx(CLAUDE),
  );
  assert.deepEqual(adaptive.additionalModelRequestFields, { thinking: { type: "adaptive" } });
  assert.deepEqual(adaptive.outputConfig, { effort: "max" });

  const novaDropped: string[] = [];
  const nova = converseCodec.encodeRequest(req, encodeCtx("amazon.nova-pro-v1:0", novaDropped));
  assert.equal(nova.additionalModelRequestFields, undefined);
  assert.deepEqual(nova.inferenceConfig, { temperature: 0.5 });
  assert.deepEqual(novaDropped, ["reasoning"]);
});

Deno.test("converse: reasoning is Nova 2's reasoningConfig (effort, budget as the nearest effort, off); Nova 1 drops it", () => {
  const NOVA2 = "us.amazon.nova-2-lite-v1:0";
  const config = (reasoning: ir.Reasoning, model = NOVA2) => {
    const dropped: string[] = [];
    const body = converseCodec.encodeRequest(request({ reasoning }), encodeCtx(model, dropped));
    const fields = body.additionalModelRequestFields as Record<string, unknown> | undefined;
    return { config: fields?.reasoningConfig, dropped };
  };
  const enabled = (maxReasoningEffort: string) => ({ type: "enabled", maxReasoningEffort });
  assert.deepEqual(config({ effort: "high" }), { config: enabled("high"), dropped: [] });
  assert.deepEqual(config({ effort: "minimal" }).config, enabled("low"));
  assert.deepEqual(config({ effort: "max" }).config, enabled("high"));
  assert.deepEqual(config({ budgetTokens: 8000 }).config, enabled("medium"));
  assert.deepEqual(config({ adaptive: true }).config, enabled("medium"));
  assert.deepEqual(config({ disabled: true }).config, { type: "disabled" });
  assert.deepEqual(config({ effort: "none" }).config, { type: "disabled" });
  // Asking only to see thoughts leaves the model's default.
  assert.deepEqual(config({ includeThoughts: true }), { config: undefined, dropped: [] });
  const arn =
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.amazon.nova-2-lite-v1:0";
  assert.deepEqual(config({ effort: "low" }, arn).config, enabled("low"));
  assert.deepEqual(config({ effort: "high" }, "amazon.nova-pro-v1:0"), {
    config: undefined,
    dropped: ["reasoning"],
  });
});

Deno.test("converse: what Converse cannot express is a 400 naming the field and the route", () => {
  const ctx = encodeCtx(CLAUDE);
  const image = (url: string): ir.Request =>
    request({
      messages: [{ role: "user", parts: [{ type: "image", source: { kind: "url", url } }] }],
    });
  rejects(
    () => converseCodec.encodeRequest(image("https://example.com/a.png"), ctx),
    `media by web URL cannot be expressed (base64 or s3:// only) by the upstream of route ${ctx.route} (field: messages[0])`,
    "messages[0]",
  );
  rejects(
    () => converseCodec.encodeRequest(request({ presencePenalty: 1 }), ctx),
    /presence_penalty cannot be expressed/,
    "presence_penalty",
  );
  const withCall = request({
    tools: [WEATHER],
    toolChoice: { type: "none" },
    messages: [
      ...request().messages,
      {
        role: "assistant",
        parts: [{ type: "tool_call", id: "call_1", name: "get_weather", arguments: "{}" }],
      },
      { role: "tool", parts: [{ type: "tool_result", callId: "call_1", content: [] }] },
    ],
  });
  rejects(() => converseCodec.encodeRequest(withCall, ctx), /tool_choice "none"/, "tool_choice");
  // Without tool blocks in the history, "none" simply sends no tools.
  const none = converseCodec.encodeRequest(
    request({ tools: [WEATHER], toolChoice: { type: "none" } }),
    ctx,
  );
  assert.equal(none.toolConfig, undefined);
});

Deno.test("converse: ARNs and ids with `:` travel as one path segment", () => {
  const arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude";
  assert.equal(
    converseCodec.path(arn, true),
    `/model/${encodeURIComponent(arn)}/converse-stream`,
  );
  assert.equal(
    converseCodec.path(CLAUDE, false),
    "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse",
  );
});

Deno.test("converse: a dot or empty model id is a 400 naming the model, not another path", () => {
  for (const model of ["..", ".", ""]) {
    rejects(() => converseCodec.path(model, false), /cannot be sent in the upstream URL/, "model");
  }
});
