/** Unit tests for the Gemini generateContent codec's tricky parts. */
import assert from "node:assert/strict";
import type * as ir from "../src/kit/ir.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import { generateContentCodec } from "../plugins/generate-content/codec.ts";
import { validateRequest } from "../plugins/generate-content/schema.ts";
import { fromOpenApi } from "../plugins/generate-content/json_schema.ts";
import { pipe, rejects } from "./codec_helpers.ts";

const ENCODE = {
  model: "gemini-x",
  route: `"g-*" → gemini (generate-content)`,
  defaultMaxTokens: 1024,
};
const DECODE = { now: 1700000000, id: "gw1" };
const CLIENT = { model: "client-model" };

const req = (messages: ir.Message[], extra: Partial<ir.Request> = {}): ir.Request => ({
  model: "m",
  system: [],
  messages,
  stream: false,
  ...extra,
});

// ---- validation ----

Deno.test("validateRequest names the first bad field", () => {
  rejects(
    () => validateRequest({ contents: [{ role: "user", parts: [{ text: "a" }, { text: 1 }] }] }),
    /^contents\[0\]\.parts\[1\]\.text: expected string, received number$/,
    "contents[0].parts[1].text",
  );
  rejects(
    () => validateRequest({ contents: [{ role: "assistant", parts: [] }] }),
    /^contents\[0\]\.role: expected "user" or "model"$/,
  );
  rejects(
    () => validateRequest({ generationConfig: { topK: 1.5 } }),
    /^generationConfig\.topK: /,
  );
  rejects(() => validateRequest("hi"), /^body: expected object/);
});

Deno.test("validateRequest keeps unknown fields and accepts snake_case names", () => {
  const body = validateRequest({
    contents: [{ parts: [{ text: "hi", future_field: 1 }] }],
    generation_config: { max_output_tokens: 5 },
    newTopLevel: true,
  });
  assert.deepEqual(body.generationConfig, { maxOutputTokens: 5 });
  assert.equal(body.newTopLevel, true);
});

// ---- ingress ids ----

Deno.test("id-less calls and responses pair statelessly by name and order", () => {
  const r = generateContentCodec.decodeRequest({
    contents: [
      { role: "user", parts: [{ text: "go" }] },
      {
        role: "model",
        parts: [
          { functionCall: { name: "f", args: { n: 1 } } },
          { functionCall: { name: "g", args: {} } },
          { functionCall: { name: "f", args: { n: 2 } } },
        ],
      },
      {
        role: "user",
        parts: [
          // Gemini CLI invents its own ids when the call had none: they match nothing.
          { functionResponse: { id: "g-17558-abc", name: "g", response: { output: "G" } } },
          { functionResponse: { name: "f", response: { output: "F1" } } },
          { functionResponse: { name: "f", response: { error: "F2 failed" } } },
        ],
      },
    ],
  }, "m");
  const calls = r.messages[1].parts as ir.ToolCallPart[];
  assert.deepEqual(calls.map((c) => c.id), ["call_0", "call_1", "call_2"]);
  assert.equal(r.messages[2].role, "tool");
  const results = r.messages[2].parts as ir.ToolResultPart[];
  assert.deepEqual(results.map((p) => p.callId), ["call_1", "call_0", "call_2"]);
  assert.equal(results[2].isError, true);
});

Deno.test("responses with known ids pair by id; orphans are rejected", () => {
  const r = generateContentCodec.decodeRequest({
    contents: [
      {
        role: "model",
        parts: [{ functionCall: { id: "a1", name: "f" } }, {
          functionCall: { id: "a2", name: "f" },
        }],
      },
      { role: "user", parts: [{ functionResponse: { id: "a2", name: "f", response: {} } }] },
    ],
  }, "m");
  assert.equal((r.messages[1].parts[0] as ir.ToolResultPart).callId, "a2");
  rejects(
    () =>
      generateContentCodec.decodeRequest({
        contents: [{ role: "user", parts: [{ functionResponse: { name: "f", response: {} } }] }],
      }, "m"),
    /^contents\[0\]\.parts\[0\]\.functionResponse: no earlier functionCall named f/,
  );
});

Deno.test("model-turn fragments join; user text parts stay apart", () => {
  const r = generateContentCodec.decodeRequest({
    contents: [
      { role: "user", parts: [{ text: "a" }, { text: "b" }] },
      { role: "model", parts: [{ text: "x", thought: true }, { text: "y", thought: true }] },
      {
        role: "model",
        parts: [{ text: "", thought: true, thoughtSignature: "S1" }, { text: "Hi" }],
      },
      { role: "model", parts: [{ text: " there" }, { text: "", thoughtSignature: "S2" }] },
    ],
  }, "m");
  assert.equal(r.messages.length, 2);
  assert.equal(r.messages[0].parts.length, 2);
  assert.deepEqual(r.messages[1].parts, [
    { type: "thinking", text: "xy", signature: { family: "gemini", value: "S1" } },
    { type: "text", text: "Hi there", signature: { family: "gemini", value: "S2" } },
  ]);
});

// ---- signatures ----

Deno.test("foreign thinking signatures ride in thoughtSignature and come back", () => {
  const res: ir.Response = {
    id: "r",
    model: "m",
    created: 0,
    finish: "tool_calls",
    parts: [
      { type: "thinking", text: "hmm", signature: { family: "anthropic", value: "EqQB" } },
      { type: "redacted_thinking", data: "ErEd", family: "anthropic" },
      { type: "tool_call", id: "toolu_1", name: "f", arguments: '{"a":1}' },
    ],
  };
  const body = generateContentCodec.encodeResponse(res, CLIENT) as {
    candidates: { content: { parts: Record<string, unknown>[] }; finishReason: string }[];
  };
  const parts = body.candidates[0].content.parts;
  assert.deepEqual(parts[0], {
    text: "hmm",
    thought: true,
    thoughtSignature: "gwsig1:anthropic:EqQB",
  });
  assert.equal(parts[1].thoughtSignature, "gwsig1:anthropic:redacted:ErEd");
  assert.deepEqual(parts[2], { functionCall: { id: "toolu_1", name: "f", args: { a: 1 } } });
  assert.equal(body.candidates[0].finishReason, "STOP");

  const back = generateContentCodec.decodeRequest({ contents: [{ role: "model", parts }] }, "m");
  assert.deepEqual(back.messages[0].parts, [
    { type: "thinking", text: "hmm", signature: { family: "anthropic", value: "EqQB" } },
    { type: "redacted_thinking", data: "ErEd", family: "anthropic" },
    { type: "tool_call", id: "toolu_1", name: "f", arguments: '{"a":1}' },
  ]);
});

Deno.test("upstream: only Gemini's own signatures and ids go to Gemini", () => {
  const body = generateContentCodec.encodeRequest(
    req([
      {
        role: "assistant",
        parts: [
          { type: "thinking", text: "t", signature: { family: "anthropic", value: "A" } },
          { type: "tool_call", id: "toolu_1", name: "f", arguments: "{}" },
          { type: "tool_call", id: "call_2", name: "f", arguments: "" },
        ],
      },
      { role: "tool", parts: [{ type: "tool_result", callId: "toolu_1", content: [] }] },
      {
        role: "assistant",
        parts: [{
          type: "tool_call",
          id: "q7x",
          name: "g",
          arguments: "[1]",
          signature: { family: "gemini", value: "G" },
        }],
      },
      {
        role: "tool",
        parts: [{ type: "tool_result", callId: "q7x", content: [{ type: "text", text: "ok" }] }],
      },
    ]),
    ENCODE,
  );
  assert.deepEqual(body.contents, [
    {
      role: "model",
      parts: [
        // Another family's history: Google's documented bypass value on the first call.
        {
          functionCall: { name: "f", args: {} },
          thoughtSignature: "skip_thought_signature_validator",
        },
        { functionCall: { name: "f", args: {} } },
      ],
    },
    { role: "user", parts: [{ functionResponse: { name: "f", response: { output: "" } } }] },
    {
      role: "model",
      parts: [{
        functionCall: { id: "q7x", name: "g", args: { raw: "[1]" } },
        thoughtSignature: "G",
      }],
    },
    {
      role: "user",
      parts: [{ functionResponse: { id: "q7x", name: "g", response: { output: "ok" } } }],
    },
  ]);
});

// ---- upstream request ----

Deno.test("upstream: mid-conversation system text is marked and tool results lead the turn", () => {
  const body = generateContentCodec.encodeRequest(
    req([
      { role: "user", parts: [{ type: "text", text: "hi" }] },
      {
        role: "assistant",
        parts: [{ type: "tool_call", id: "call_9", name: "f", arguments: "{}" }],
      },
      { role: "system", parts: [{ type: "text", text: "be brief" }] },
      {
        role: "tool",
        parts: [{
          type: "tool_result",
          callId: "call_9",
          content: [{ type: "text", text: "r" }],
          isError: true,
        }],
      },
    ], { system: [{ type: "text", text: "sys" }] }),
    ENCODE,
  );
  const contents = body.contents as { role: string; parts: Record<string, unknown>[] }[];
  assert.deepEqual(body.systemInstruction, { parts: [{ text: "sys" }] });
  assert.equal(contents.length, 3);
  assert.deepEqual(contents[2].parts[0], {
    functionResponse: { name: "f", response: { error: "r" } },
  });
  assert.match(String(contents[2].parts[1].text), /^Note from the operator/);
  assert.deepEqual(contents[2].parts[2], { text: "be brief" });
});

Deno.test("upstream: rejections name the field and the route", () => {
  const image = (
    source: ir.MediaSource,
  ): ir.Message[] => [{ role: "user", parts: [{ type: "image", source }] }];
  rejects(
    () =>
      generateContentCodec.encodeRequest(
        req(image({ kind: "url", url: "https://x/y.png" })),
        ENCODE,
      ),
    /image URLs cannot be fetched .* route "g-\*" → gemini/,
    "image_url",
  );
  rejects(() => generateContentCodec.encodeRequest(req([], { n: 2 }), ENCODE), /n > 1/, "n");
  rejects(
    () =>
      generateContentCodec.encodeRequest(
        req([{ role: "tool", parts: [{ type: "tool_result", callId: "x", content: [] }] }]),
        ENCODE,
      ),
    /Gemini needs the function name/,
  );
  const inline = generateContentCodec.encodeRequest(
    req(image({ kind: "url", url: "data:image/png;base64,AAA=" })),
    ENCODE,
  );
  assert.deepEqual(inline.contents, [{
    role: "user",
    parts: [{ inlineData: { mimeType: "image/png", data: "AAA=" } }],
  }]);
});

Deno.test("upstream: reasoning table", () => {
  const thinking = (reasoning: ir.Reasoning) =>
    (generateContentCodec.encodeRequest(req([], { reasoning }), ENCODE).generationConfig as Record<
      string,
      unknown
    >)
      ?.thinkingConfig;
  assert.deepEqual(thinking({ effort: "none" }), { thinkingBudget: 0 });
  assert.deepEqual(thinking({ disabled: true, includeThoughts: true }), { thinkingBudget: 0 });
  assert.deepEqual(thinking({ budgetTokens: 900, effort: "high" }), { thinkingBudget: 900 });
  assert.deepEqual(thinking({ effort: "xhigh", includeThoughts: true }), {
    thinkingLevel: "HIGH",
    includeThoughts: true,
  });
  assert.deepEqual(thinking({ effort: "minimal" }), { thinkingLevel: "MINIMAL" });
  assert.deepEqual(thinking({ adaptive: true }), { thinkingBudget: -1 });
});

Deno.test("upstream: custom tools become a function taking {input}", () => {
  const body = generateContentCodec.encodeRequest(
    req([{
      role: "assistant",
      parts: [{
        type: "tool_call",
        id: "c",
        name: "patch",
        arguments: "*** Begin",
        kind: "custom",
      }],
    }], {
      tools: [{ name: "patch", kind: "custom", description: "Apply a patch" }],
    }),
    ENCODE,
  );
  const decl = (body.tools as { functionDeclarations: Record<string, unknown>[] }[])[0]
    .functionDeclarations[0];
  assert.deepEqual((decl.parametersJsonSchema as { required: string[] }).required, ["input"]);
  assert.deepEqual(
    (body.contents as { parts: { functionCall: unknown }[] }[])[0].parts[0].functionCall,
    { id: "c", name: "patch", args: { input: "*** Begin" } },
  );
});

Deno.test("fromOpenApi: upper-case types, nullable, examples", () => {
  assert.deepEqual(
    fromOpenApi({
      type: "OBJECT",
      properties: {
        a: { type: "STRING", nullable: true, enum: ["x"] },
        b: { type: "ARRAY", items: { type: "NUMBER" } },
      },
      propertyOrdering: ["a", "b"],
      example: { a: "x" },
    }),
    {
      type: "object",
      properties: {
        a: { type: ["string", "null"], enum: ["x", null] },
        b: { type: "array", items: { type: "number" } },
      },
      examples: [{ a: "x" }],
    },
  );
});

// ---- upstream responses and streams ----

Deno.test("decodeResponse: synthesized ids, usage per §5.6, tool calls finish as tool_calls", () => {
  const res = generateContentCodec.decodeResponse({
    candidates: [{
      content: {
        role: "model",
        parts: [{ functionCall: { name: "f", args: { x: 1 } }, thoughtSignature: "S" }],
      },
      finishReason: "STOP",
    }],
    usageMetadata: {
      promptTokenCount: 100,
      cachedContentTokenCount: 40,
      candidatesTokenCount: 10,
      thoughtsTokenCount: 5,
    },
    responseId: "resp/1",
  }, { ...DECODE, customTools: [] });
  assert.equal(res.finish, "tool_calls");
  assert.deepEqual(res.parts, [
    {
      type: "tool_call",
      id: "call_resp_1_0",
      name: "f",
      arguments: '{"x":1}',
      signature: { family: "gemini", value: "S" },
    },
  ]);
  assert.deepEqual(res.usage, {
    inputTokens: 100,
    outputTokens: 15,
    cacheReadTokens: 40,
    reasoningTokens: 5,
  });
});

Deno.test("decodeResponse: calls to custom tools unwrap their {input}", () => {
  const res = generateContentCodec.decodeResponse({
    candidates: [{
      content: { parts: [{ functionCall: { name: "patch", args: { input: "*** Begin" } } }] },
      finishReason: "STOP",
    }],
  }, { ...DECODE, customTools: ["patch"] });
  assert.deepEqual(res.parts[0], {
    type: "tool_call",
    id: "call_gw1_0",
    name: "patch",
    kind: "custom",
    arguments: "*** Begin",
  });
});

const sse = (...chunks: unknown[]): SseEvent[] => chunks.map((c) => ({ data: JSON.stringify(c) }));
const chunk = (parts: unknown[], extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: "model", parts }, index: 0, ...extra }],
  responseId: "r9",
  modelVersion: "gemini-2.5-pro",
});

Deno.test("decodeStream: parts open and close with consecutive indexes", async () => {
  const events = await pipe(
    sse(
      chunk([{ text: "think", thought: true }]),
      chunk([{ text: "", thought: true, thoughtSignature: "T" }, { text: "Hi" }]),
      chunk([{ text: "!" }, { functionCall: { name: "f", args: {} } }, {
        functionCall: { id: "n1", name: "g" },
      }]),
      chunk([{ text: "", thoughtSignature: "S" }], { finishReason: "STOP" }),
      chunk([{ text: "ignored after the end" }]),
    ),
    generateContentCodec.decodeStream(DECODE),
  );
  assert.deepEqual(
    events.map((e) => e.type === "start" ? "start" : `${e.type}:${"index" in e ? e.index : ""}`),
    [
      "start",
      "part_start:0",
      "thinking_delta:0",
      "signature:0",
      "part_stop:0",
      "part_start:1",
      "text_delta:1",
      "text_delta:1",
      "part_stop:1",
      "part_start:2",
      "arguments_delta:2",
      "part_stop:2",
      "part_start:3",
      "arguments_delta:3",
      "part_stop:3",
      "part_start:4",
      "signature:4",
      "part_stop:4",
      "finish:",
    ],
  );
  const starts = events.filter((e) => e.type === "part_start");
  assert.deepEqual(starts.map((e) => e.part.type === "tool_call" && e.part.id), [
    false,
    false,
    "call_r9_0",
    "n1",
    false,
  ]);
  assert.deepEqual(events.at(-1), { type: "finish", reason: "tool_calls" });
});

Deno.test("decodeStream: no finish without finishReason; errors become IR errors", async () => {
  const cut = await pipe(sse(chunk([{ text: "a" }])), generateContentCodec.decodeStream(DECODE));
  assert.ok(!cut.some((e) => e.type === "finish"));
  const failed = await pipe(
    sse({ error: { code: 503, message: "overloaded", status: "UNAVAILABLE" } }),
    generateContentCodec.decodeStream(DECODE),
  );
  assert.deepEqual(failed, [{
    type: "error",
    status: 503,
    kind: "overloaded",
    message: "overloaded",
  }]);
});

Deno.test("encodeStream: calls go out whole, the last chunk finishes, errors in Google's shape", async () => {
  const events: ir.StreamEvent[] = [
    { type: "start", id: "msg_1", model: "m", created: 0 },
    { type: "part_start", index: 0, part: { type: "text" } },
    { type: "text_delta", index: 0, text: "Hi" },
    { type: "part_stop", index: 0 },
    { type: "part_start", index: 1, part: { type: "tool_call", id: "toolu_1", name: "f" } },
    { type: "arguments_delta", index: 1, json: '{"a":' },
    { type: "arguments_delta", index: 1, json: "1}" },
    { type: "signature", index: 1, signature: { family: "gemini", value: "G" } },
    { type: "part_stop", index: 1 },
    {
      type: "finish",
      reason: "tool_calls",
      usage: { inputTokens: 10, outputTokens: 8, reasoningTokens: 3 },
    },
    { type: "error", status: 529, kind: "overloaded", message: "busy" },
  ];
  const out = (await pipe(events, generateContentCodec.encodeStream(CLIENT))).map((e) => {
    assert.equal(e.event, undefined);
    return JSON.parse(e.data);
  });
  assert.equal(out.length, 4);
  assert.deepEqual(out[0].candidates[0].content.parts, [{ text: "Hi" }]);
  assert.deepEqual(out[1].candidates[0].content.parts, [
    { functionCall: { id: "toolu_1", name: "f", args: { a: 1 } }, thoughtSignature: "G" },
  ]);
  assert.equal(out[1].responseId, "msg_1");
  assert.equal(out[1].modelVersion, "client-model");
  assert.equal(out[2].candidates[0].finishReason, "STOP");
  assert.deepEqual(out[2].usageMetadata, {
    promptTokenCount: 10,
    candidatesTokenCount: 5,
    totalTokenCount: 18,
    thoughtsTokenCount: 3,
  });
  assert.deepEqual(out[3], { error: { code: 503, message: "busy", status: "UNAVAILABLE" } });
});

Deno.test("encodeStream: nothing terminal without finish", async () => {
  const out = await pipe<ir.StreamEvent, SseEvent>([
    { type: "start", id: "x", model: "m", created: 0 },
    { type: "part_start", index: 0, part: { type: "text" } },
    { type: "text_delta", index: 0, text: "cut" },
  ], generateContentCodec.encodeStream(CLIENT));
  assert.equal(out.length, 1);
  assert.ok(!out[0].data.includes("finishReason"));
});
