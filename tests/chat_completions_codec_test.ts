/** Unit tests for the Chat Completions codec's tricky parts (goldens cover the common paths). */
import assert from "node:assert/strict";
import { chatCodec } from "../plugins/chat/codec.ts";
import { parseRequest } from "../plugins/chat/schema.ts";
import { MOVED_MEDIA_NOTE } from "../plugins/chat/encode_request.ts";
import { TOOL_ERROR_PREFIX } from "../plugins/shared.ts";
import type { ClientContext, EncodeContext } from "../src/kit/codec.ts";
import { GatewayError } from "../src/kit/errors.ts";
import type * as ir from "../src/kit/ir.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import { pipe } from "./codec_helpers.ts";

const ENCODE: EncodeContext = { model: "up", route: '"gpt-*" → oa (chat)', defaultMaxTokens: 1024 };
const DECODE = { now: 1700000000, id: "gw1" };

function badRequestOf(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof GatewayError, String(e));
    return e;
  }
  assert.fail("expected a GatewayError");
}

const body = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
  model: "m",
  messages,
  ...extra,
});

function irRequest(messages: ir.Message[], extra: Partial<ir.Request> = {}): ir.Request {
  return { model: "m", system: [], messages, stream: false, ...extra };
}

const sse = (...chunks: unknown[]): SseEvent[] =>
  chunks.map((c) => ({ data: typeof c === "string" ? c : JSON.stringify(c) }));

const chunk = (delta: unknown, finish: string | null = null) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 5,
  model: "gpt",
  choices: [{ index: 0, delta, finish_reason: finish }],
});

// ---- validation ----

Deno.test("parseRequest names the first bad field path", () => {
  const cases: [unknown, string][] = [
    [body([{ role: "user", content: "a" }, { role: "user", content: 5 }]), "messages[1].content"],
    [
      body([{ role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: 1 }] }]),
      "messages[0].content[1].text",
    ],
    [
      body([{ role: "user", content: [{ type: "image_url", image_url: { url: 2 } }] }]),
      "messages[0].content[0].image_url.url",
    ],
    [body([{ role: "robot", content: "a" }]), "messages[0].role"],
    [body([{ role: "tool", content: "a" }]), "messages[0].tool_call_id"],
    [body([], { tool_choice: "sometimes" }), "tool_choice"],
    [
      body([], { tool_choice: { type: "function", function: { name: 1 } } }),
      "tool_choice.function.name",
    ],
    [body([], { stop: [1] }), "stop[0]"],
    [body([], { n: 1.5 }), "n"],
  ];
  for (const [input, path] of cases) {
    const err = badRequestOf(() => parseRequest(input));
    assert.equal(err.status, 400);
    assert.equal(err.param, path, err.message);
    assert.ok(err.message.startsWith(`${path}: `), err.message);
  }
  assert.equal(
    badRequestOf(() => parseRequest(body([{ role: "user", content: 5 }]))).message,
    "messages[0].content: expected string or array",
  );
  assert.equal(
    badRequestOf(() => parseRequest(body([{ role: "tool", content: "a" }]))).message,
    "messages[0].tool_call_id: required",
  );
});

Deno.test("parseRequest lets unknown fields and part types through", () => {
  const input = body([{ role: "user", content: [{ type: "input_video", video: {} }] }], {
    brand_new_option: { x: 1 },
  });
  assert.deepEqual(parseRequest(input), input);
  // ...but a converted route cannot express the unknown part.
  const err = badRequestOf(() => chatCodec.decodeRequest(input, "m"));
  assert.equal(err.param, "messages[0].content[0].type");
});

// ---- ingress request ----

Deno.test("decodeRequest: leading system messages are the prompt, later ones stay in place", () => {
  const req = chatCodec.decodeRequest(
    body([
      { role: "system", content: "a" },
      { role: "developer", content: [{ type: "text", text: "b" }] },
      { role: "user", content: "hi" },
      { role: "developer", content: "c" },
    ]),
    "m",
  );
  assert.deepEqual(req.system, [{ type: "text", text: "a" }, { type: "text", text: "b" }]);
  assert.deepEqual(req.messages.map((m) => m.role), ["user", "system"]);
});

Deno.test("decodeRequest: tool results are grouped and named after their calls", () => {
  const req = chatCodec.decodeRequest(
    body([
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "f", arguments: "{}" } },
          { id: "c2", type: "function", function: { name: "g", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "1" },
      { role: "tool", tool_call_id: "c2", content: "2" },
    ]),
    "m",
  );
  assert.equal(req.messages.length, 3);
  assert.deepEqual(req.messages[1].parts.map((p) => p.type), ["tool_call", "tool_call"]);
  assert.deepEqual(req.messages[2], {
    role: "tool",
    parts: [
      { type: "tool_result", callId: "c1", name: "f", content: [{ type: "text", text: "1" }] },
      { type: "tool_result", callId: "c2", name: "g", content: [{ type: "text", text: "2" }] },
    ],
  });
});

Deno.test("decodeRequest: carried signatures come back with their family", () => {
  const req = chatCodec.decodeRequest(
    body([
      { role: "user", content: "q" },
      {
        role: "assistant",
        content: null,
        reasoning_content: "ignored when thinking_blocks exist",
        thinking_blocks: [
          { type: "thinking", thinking: "t", signature: "gwsig1:anthropic:SIG" },
          { type: "redacted_thinking", data: "gwsig1:anthropic:RED" },
        ],
        tool_calls: [{
          id: "c",
          type: "function",
          function: { name: "f", arguments: "{}" },
          extra_content: { google: { thought_signature: "gwsig1:gemini:TS" } },
        }],
      },
    ]),
    "m",
  );
  assert.deepEqual(req.messages[1].parts, [
    { type: "thinking", text: "t", signature: { family: "anthropic", value: "SIG" } },
    { type: "redacted_thinking", data: "RED", family: "anthropic" },
    {
      type: "tool_call",
      id: "c",
      name: "f",
      arguments: "{}",
      signature: { family: "gemini", value: "TS" },
    },
  ]);
});

Deno.test("decodeRequest: allowed_tools narrows the offered tools", () => {
  const tool = (name: string) => ({ type: "function", function: { name } });
  const req = chatCodec.decodeRequest(
    body([{ role: "user", content: "q" }], {
      tools: [tool("a"), tool("b"), tool("c")],
      tool_choice: {
        type: "allowed_tools",
        allowed_tools: { mode: "auto", tools: [tool("a"), tool("c")] },
      },
    }),
    "m",
  );
  assert.deepEqual(req.tools?.map((t) => t.name), ["a", "c"]);
  assert.deepEqual(req.toolChoice, { type: "auto" });
});

Deno.test("decodeRequest: rejects output-changing fields no other format has", () => {
  for (
    const [extra, param] of [
      [{ logit_bias: { "1": 5 } }, "logit_bias"],
      [{ modalities: ["text", "audio"] }, "audio"],
      [{ reasoning_effort: "extreme" }, "reasoning_effort"],
      [
        { tools: [{ type: "custom", custom: { name: "x", format: { type: "grammar" } } }] },
        "tools[0].custom.format",
      ],
    ] as const
  ) {
    const err = badRequestOf(() => chatCodec.decodeRequest(body([], extra), "m"));
    assert.equal(err.param, param, err.message);
  }
});

// ---- upstream request ----

Deno.test("encodeRequest: media in tool results moves to a following user message", () => {
  const image: ir.ImagePart = {
    type: "image",
    source: { kind: "base64", mediaType: "image/png", data: "AAA" },
  };
  const out = chatCodec.encodeRequest(
    irRequest([{
      role: "user",
      parts: [
        {
          type: "tool_result",
          callId: "c1",
          content: [{ type: "text", text: "shot" }, image],
        },
        {
          type: "tool_result",
          callId: "c2",
          content: [{ type: "text", text: "no" }],
          isError: true,
        },
        { type: "text", text: "and?" },
      ],
    }]),
    ENCODE,
  );
  assert.deepEqual(out.messages, [
    { role: "tool", tool_call_id: "c1", content: `shot\n${MOVED_MEDIA_NOTE}` },
    { role: "tool", tool_call_id: "c2", content: `${TOOL_ERROR_PREFIX}no` },
    {
      role: "user",
      content: [
        { type: "image_url", image_url: { url: "data:image/png;base64,AAA" } },
        { type: "text", text: "and?" },
      ],
    },
  ]);
});

Deno.test("encodeRequest: signatures go upstream only to their own family; thinking is not replayed", () => {
  const call = (id: string, family: ir.Family): ir.ToolCallPart => ({
    type: "tool_call",
    id,
    name: "f",
    arguments: "{}",
    signature: { family, value: `sig-${id}` },
  });
  const out = chatCodec.encodeRequest(
    irRequest([
      {
        role: "assistant",
        parts: [{ type: "thinking", text: "hmm" }, call("a", "openai"), call("b", "gemini")],
      },
      { role: "assistant", parts: [{ type: "thinking", text: "only thoughts" }] },
    ]),
    ENCODE,
  );
  assert.deepEqual(out.messages, [{
    role: "assistant",
    content: null,
    tool_calls: [
      {
        id: "a",
        type: "function",
        function: { name: "f", arguments: "{}" },
        extra_content: { google: { thought_signature: "sig-a" } },
      },
      { id: "b", type: "function", function: { name: "f", arguments: "{}" } },
    ],
  }]);
});

Deno.test("encodeRequest: streaming asks for usage; inexpressible settings name field and route", () => {
  const out = chatCodec.encodeRequest(irRequest([], { stream: true }), ENCODE);
  assert.deepEqual(out.stream_options, { include_usage: true });
  const err = badRequestOf(() => chatCodec.encodeRequest(irRequest([], { n: 2 }), ENCODE));
  assert.equal(err.param, "n");
  assert.ok(err.message.includes(ENCODE.route), err.message);
  const dropped: string[] = [];
  const body = chatCodec.encodeRequest(irRequest([], { topK: 5 }), { ...ENCODE, dropped });
  assert.equal(body.top_k, undefined);
  assert.deepEqual(dropped, ["top_k"], "top_k is dropped and reported, not sent");
});

Deno.test("encodeRequest: thinking budgets become efforts; disabled or adaptive keeps the default", () => {
  const effort = (reasoning: ir.Reasoning) =>
    chatCodec.encodeRequest(irRequest([], { reasoning }), ENCODE).reasoning_effort;
  assert.equal(effort({ budgetTokens: 1024 }), "low");
  assert.equal(effort({ budgetTokens: 2000 }), "medium");
  assert.equal(effort({ budgetTokens: 32000 }), "high");
  assert.equal(effort({ budgetTokens: -1 }), undefined);
  assert.equal(effort({ disabled: true }), undefined);
  assert.equal(effort({ adaptive: true }), undefined);
  assert.equal(effort({ effort: "xhigh", budgetTokens: 10 }), "xhigh");
});

// ---- responses ----

Deno.test("encodeResponse: chat ids, synthesized call ids, carried thinking", () => {
  const res: ir.Response = {
    id: "msg_1",
    model: "claude",
    created: 9,
    parts: [
      { type: "thinking", text: "a", signature: { family: "anthropic", value: "S" } },
      { type: "redacted_thinking", data: "R", family: "anthropic" },
      { type: "text", text: "x" },
      { type: "tool_call", id: "", name: "f", arguments: "{}" },
    ],
    finish: "stop",
  };
  const out = chatCodec.encodeResponse(res, { model: "client" }) as {
    id: string;
    choices: { message: Record<string, unknown>; finish_reason: string }[];
  };
  assert.equal(out.id, "chatcmpl-msg_1");
  const [choice] = out.choices;
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.reasoning_content, "a");
  assert.deepEqual(choice.message.thinking_blocks, [
    { type: "thinking", thinking: "a", signature: "gwsig1:anthropic:S" },
    { type: "redacted_thinking", data: "gwsig1:anthropic:R" },
  ]);
  assert.deepEqual(choice.message.tool_calls, [
    { id: "call_msg_1_0", type: "function", function: { name: "f", arguments: "{}" } },
  ]);
});

Deno.test("decodeResponse: usage per §5.6; a malformed body is the upstream's 502", () => {
  const res = chatCodec.decodeResponse({
    id: "chatcmpl-9",
    created: 3,
    model: "gpt",
    choices: [{ finish_reason: "stop", message: { role: "assistant", content: "hi" } }],
    usage: {
      prompt_tokens: 100,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 60 },
      completion_tokens_details: { reasoning_tokens: 5 },
    },
  }, DECODE);
  assert.deepEqual(res.usage, {
    inputTokens: 100,
    outputTokens: 20,
    cacheReadTokens: 60,
    reasoningTokens: 5,
  });
  const err = badRequestOf(() => chatCodec.decodeResponse({ choices: "none" }, DECODE));
  assert.equal(err.status, 502);
});

// ---- streams ----

Deno.test("decodeStream: parts open and close in order; finish waits for [DONE]", async () => {
  const events = await pipe(
    sse(
      chunk({ role: "assistant", content: "" }),
      chunk({ reasoning_content: "think" }),
      chunk({ content: "Hi" }),
      chunk({
        tool_calls: [{
          index: 0,
          id: "c0",
          type: "function",
          function: { name: "f", arguments: "" },
        }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: ":1}" } }] }),
      chunk({
        tool_calls: [{
          index: 1,
          id: "c1",
          type: "function",
          function: { name: "g", arguments: "{}" },
        }],
      }),
      chunk({}, "tool_calls"),
      { ...chunk({}), choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } },
      "[DONE]",
    ),
    chatCodec.decodeStream(DECODE),
  );
  assert.deepEqual(events, [
    { type: "start", id: "chatcmpl-1", model: "gpt", created: 5 },
    { type: "part_start", index: 0, part: { type: "thinking" } },
    { type: "thinking_delta", index: 0, text: "think" },
    { type: "part_stop", index: 0 },
    { type: "part_start", index: 1, part: { type: "text" } },
    { type: "text_delta", index: 1, text: "Hi" },
    { type: "part_stop", index: 1 },
    { type: "part_start", index: 2, part: { type: "tool_call", id: "c0", name: "f" } },
    { type: "arguments_delta", index: 2, json: '{"a"' },
    { type: "arguments_delta", index: 2, json: ":1}" },
    { type: "part_stop", index: 2 },
    { type: "part_start", index: 3, part: { type: "tool_call", id: "c1", name: "g" } },
    { type: "arguments_delta", index: 3, json: "{}" },
    { type: "part_stop", index: 3 },
    { type: "finish", reason: "tool_calls", usage: { inputTokens: 7, outputTokens: 3 } },
  ]);
});

Deno.test("decodeStream: no [DONE] means no finish; an error chunk is an error event", async () => {
  const cut = await pipe(
    sse(chunk({ content: "a" }), chunk({}, "stop")),
    chatCodec.decodeStream(DECODE),
  );
  assert.ok(!cut.some((e) => e.type === "finish"));

  const failed = await pipe(
    sse(
      chunk({ content: "a" }),
      { error: { message: "slow down", type: "rate_limit_error" } },
      "[DONE]",
    ),
    chatCodec.decodeStream(DECODE),
  );
  assert.deepEqual(failed.at(-1), {
    type: "error",
    status: 429,
    kind: "rate_limit",
    message: "slow down",
  });
});

Deno.test("decodeStream: a missing tool-call id is synthesized from the response id", async () => {
  const events = await pipe(
    sse(chunk({ tool_calls: [{ index: 0, type: "function", function: { name: "f" } }] })),
    chatCodec.decodeStream(DECODE),
  );
  assert.deepEqual(events[1], {
    type: "part_start",
    index: 0,
    part: { type: "tool_call", id: "call_chatcmpl-1_0", name: "f" },
  });
});

const STREAM: ir.StreamEvent[] = [
  { type: "start", id: "msg_1", model: "claude", created: 9 },
  { type: "part_start", index: 0, part: { type: "thinking" } },
  { type: "thinking_delta", index: 0, text: "th" },
  { type: "thinking_delta", index: 0, text: "ink" },
  { type: "signature", index: 0, signature: { family: "anthropic", value: "S" } },
  { type: "part_stop", index: 0 },
  {
    type: "part_start",
    index: 1,
    part: {
      type: "tool_call",
      id: "toolu_1",
      name: "f",
      signature: { family: "gemini", value: "G" },
    },
  },
  { type: "arguments_delta", index: 1, json: "{}" },
  { type: "part_stop", index: 1 },
  { type: "finish", reason: "stop", usage: { inputTokens: 4, outputTokens: 2 } },
];

async function clientStream(ctx: ClientContext, events = STREAM) {
  const out = await pipe(events, chatCodec.encodeStream(ctx));
  return out.map((e) => e.data === "[DONE]" ? "[DONE]" : JSON.parse(e.data));
}

Deno.test("encodeStream: the SDK helper's order, carried signatures, usage only when asked", async () => {
  const chunks = await clientStream({ model: "client", streamUsage: true });
  const deltas = chunks.slice(0, -2).map((c) => c.choices[0].delta);
  assert.deepEqual(deltas, [
    { role: "assistant", content: "" },
    { reasoning_content: "th" },
    { reasoning_content: "ink" },
    {
      tool_calls: [{
        index: 0,
        id: "toolu_1",
        type: "function",
        function: { name: "f", arguments: "" },
        extra_content: { google: { thought_signature: "gwsig1:gemini:G" } },
      }],
    },
    { tool_calls: [{ index: 0, function: { arguments: "{}" } }] },
    { thinking_blocks: [{ type: "thinking", thinking: "think", signature: "gwsig1:anthropic:S" }] },
    {},
  ]);
  assert.equal(chunks.at(-3).choices[0].finish_reason, "tool_calls");
  assert.deepEqual(chunks.at(-2).choices, []);
  assert.equal(chunks.at(-2).usage.total_tokens, 6);
  assert.equal(chunks.at(-1), "[DONE]");
  assert.ok(chunks.slice(0, -1).every((c) => c.id === "chatcmpl-msg_1" && c.model === "client"));

  const quiet = await clientStream({ model: "client" });
  assert.ok(!quiet.some((c) => c !== "[DONE]" && c.usage), "no usage chunk unless asked");
});

Deno.test("encodeStream: nothing terminal without finish; an error ends with [DONE]", async () => {
  const cut = await clientStream({ model: "c" }, STREAM.slice(0, -1));
  assert.ok(!cut.includes("[DONE]"));
  assert.ok(cut.every((c) => c.choices[0].finish_reason === null));

  const failed = await clientStream({ model: "c" }, [
    STREAM[0],
    { type: "error", status: 529, kind: "overloaded", message: "Overloaded" },
  ]);
  assert.deepEqual(failed.slice(1), [
    {
      error: { message: "Overloaded", type: "service_unavailable_error", param: null, code: null },
    },
    "[DONE]",
  ]);
});
