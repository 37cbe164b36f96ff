/** Unit tests for the tricky parts of the Anthropic Messages codec (plugins/messages). */
import assert from "node:assert/strict";
import type * as ir from "../src/kit/ir.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import { messagesCodec as codec } from "../plugins/messages/codec.ts";
import { chatCodec } from "../plugins/chat/codec.ts";
import { validateRequest } from "../plugins/messages/schema.ts";
import { pipe, rejects } from "./codec_helpers.ts";

const ENC = { model: "up", route: `"claude-*" → up (messages)`, defaultMaxTokens: 4096 };
const DEC = { now: 1700000000, id: "gw_1" };
const CLIENT = { model: "client-model" };

const irRequest = (over: Partial<ir.Request> = {}): ir.Request => ({
  model: "m",
  system: [],
  messages: [{ role: "user", parts: [{ type: "text", text: "hi" }] }],
  stream: false,
  ...over,
});

const body = (over: Record<string, unknown> = {}) => ({
  model: "claude",
  max_tokens: 100,
  messages: [{ role: "user", content: "hi" }],
  ...over,
});

// ---- validation ----

Deno.test("validateRequest names the bad field", () => {
  rejects(
    () => validateRequest({ model: "m", messages: [] }),
    /^max_tokens: required$/,
    "max_tokens",
  );
  rejects(
    () => validateRequest(body({ max_tokens: "10" })),
    /^max_tokens: expected number/,
    "max_tokens",
  );
  const messages = [
    { role: "user", content: "a" },
    { role: "assistant", content: "b" },
    { role: "user", content: 7 },
  ];
  rejects(
    () => validateRequest(body({ messages })),
    /^messages\[2\]\.content: expected string or array$/,
    "messages[2].content",
  );
  const nested = [{
    role: "user",
    content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: 1 }] }],
  }];
  rejects(
    () => validateRequest(body({ messages: nested })),
    /^messages\[0\]\.content\[0\]\.content\[0\]\.text: expected string/,
  );
  rejects(
    () => validateRequest(body({ messages: [{ role: "user", content: [{ type: "text" }] }] })),
    /^messages\[0\]\.content\[0\]\.text: required$/,
  );
});

Deno.test("validateRequest lets unknown block types and fields through (passthrough)", () => {
  const messages = [{ role: "user", content: [{ type: "brand_new_block", x: 1 }] }];
  assert.doesNotThrow(() => validateRequest(body({ messages, future_field: { a: 1 } })));
});

Deno.test("decodeRequest: server tools are hosted tools, their runs leave the history", () => {
  const server = [{
    role: "assistant",
    content: [
      { type: "thinking", thinking: "t", signature: "sig" },
      { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "q" } },
      { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] },
      { type: "text", text: "answer", citations: [{ type: "web_search_result_location" }] },
    ],
  }];
  const tools = [
    { type: "bash_20250124", name: "bash" },
    { type: "web_search_20250305", name: "web_search", max_uses: 2, allowed_domains: ["a.b"] },
  ];
  const req = codec.decodeRequest(
    body({ messages: server, tools, tool_choice: { type: "tool", name: "web_search" } }),
    "m",
  );
  assert.deepEqual(req.messages, [{
    role: "assistant",
    parts: [
      { type: "thinking", text: "t", signature: { family: "anthropic", value: "sig" } },
      { type: "text", text: "answer" },
    ],
  }]);
  assert.deepEqual(req.hostedTools, [
    { name: "bash", field: "tools[0]" },
    {
      name: "web_search",
      field: "tools[1]",
      kind: "web_search",
      maxUses: 2,
      allowedDomains: ["a.b"],
    },
  ]);
  assert.equal(req.hostedChoice, "web_search");
  assert.equal(req.toolChoice, undefined);
});

Deno.test("decodeRequest rejects what only an Anthropic upstream understands", () => {
  rejects(
    () => codec.decodeRequest(body({ messages: [{ role: "tool", content: "x" }] }), "m"),
    /expected user, assistant or system/,
    "messages[0].role",
  );
});

Deno.test("cache_control is the IR's neutral cache breakpoint, both ways; chat's breakpoint becomes one", () => {
  const control = { type: "ephemeral", ttl: "1h" };
  const req = codec.decodeRequest(
    body({
      cache_control: { type: "ephemeral" },
      system: [{ type: "text", text: "sys", cache_control: control }],
      tools: [{ name: "f", input_schema: { type: "object" }, cache_control: control }],
    }),
    "m",
  );
  assert.deepEqual(req.cache, {});
  assert.deepEqual(req.system, [{ type: "text", text: "sys", cache: { ttl: "1h" } }]);
  assert.deepEqual(req.tools?.[0].cache, { ttl: "1h" });
  const wire = codec.encodeRequest(req, ENC);
  assert.deepEqual(wire.cache_control, { type: "ephemeral" });
  assert.deepEqual(wire.system, [{ type: "text", text: "sys", cache_control: control }]);
  assert.deepEqual((wire.tools as Record<string, unknown>[])[0].cache_control, control);

  const chat = chatCodec.decodeRequest({
    model: "m",
    messages: [{
      role: "system",
      content: [{ type: "text", text: "s", prompt_cache_breakpoint: { mode: "explicit" } }],
    }],
  }, "m");
  const fromChat = codec.encodeRequest(chat, ENC);
  assert.deepEqual(fromChat.system, [{
    type: "text",
    text: "s",
    cache_control: { type: "ephemeral" },
  }]);

  rejects(
    () => codec.decodeRequest(body({ cache_control: { type: "persistent" } }), "m"),
    /cache_control\.type: "persistent" cannot be converted/,
    "cache_control.type",
  );
});

Deno.test("decodeRequest loads deferred tools up front and drops the tool search tool", () => {
  const tools = [
    { type: "tool_search_tool_regex_20251119", name: "tool_search_tool_regex" },
    { name: "Read", input_schema: { type: "object" }, defer_loading: true },
  ];
  const req = codec.decodeRequest(body({ tools }), "m");
  assert.deepEqual(req.tools, [{ name: "Read", parameters: { type: "object" } }]);
});

Deno.test("decodeRequest splits tool results, mid-conversation system blocks and content", () => {
  const req = codec.decodeRequest(
    body({
      messages: [{
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t1", content: "ok" },
          { type: "tool_result", tool_use_id: "t2", is_error: true },
          { type: "mid_conv_system", content: [{ type: "text", text: "be brief" }] },
          { type: "text", text: "next" },
        ],
      }, { role: "system", content: "sys" }],
    }),
    "m",
  );
  assert.deepEqual(req.messages.map((m) => [m.role, m.parts.length]), [
    ["tool", 2],
    ["system", 1],
    ["user", 1],
    ["system", 1],
  ]);
  assert.deepEqual(req.messages[0].parts[1], {
    type: "tool_result",
    callId: "t2",
    content: [],
    isError: true,
  });
});

// ---- signatures ----

Deno.test("foreign signatures ride in client blocks and come back on the next request", () => {
  const gemini = (value: string): ir.Signature => ({ family: "gemini", value });
  const res: ir.Response = {
    id: "r1",
    model: "gemini-3",
    created: 1,
    finish: "tool_calls",
    parts: [
      { type: "thinking", text: "hmm", signature: gemini("T") },
      { type: "text", text: "Checking.", signature: gemini("X") },
      { type: "tool_call", id: "call_0", name: "f", arguments: "{}", signature: gemini("C") },
      { type: "redacted_thinking", data: "enc", family: "openai" },
    ],
  };
  const out = codec.encodeResponse(res, CLIENT) as { content: Record<string, unknown>[] };
  assert.deepEqual(out.content.map((b) => [b.type, b.signature ?? b.data ?? null]), [
    ["thinking", "gwsig1:gemini:T"],
    ["text", null],
    ["thinking", "gwsig1:gemini:attached:X"],
    ["tool_use", null],
    ["thinking", "gwsig1:gemini:attached:C"],
    ["redacted_thinking", "gwsig1:openai:enc"],
  ]);
  // Claude Code replays the assistant content unchanged.
  const req = codec.decodeRequest(
    body({
      messages: [{ role: "user", content: "q" }, { role: "assistant", content: out.content }],
    }),
    "m",
  );
  assert.deepEqual(req.messages[1].parts, res.parts);
});

Deno.test("encodeRequest replays only Anthropic signatures", () => {
  const out = codec.encodeRequest(
    irRequest({
      messages: [{
        role: "assistant",
        parts: [
          { type: "thinking", text: "a", signature: { family: "anthropic", value: "S" } },
          { type: "thinking", text: "b", signature: { family: "gemini", value: "G" } },
          { type: "thinking", text: "c" },
          { type: "redacted_thinking", data: "R", family: "anthropic" },
          { type: "redacted_thinking", data: "O", family: "openai" },
          { type: "text", text: "done", signature: { family: "gemini", value: "G2" } },
        ],
      }],
    }),
    ENC,
  );
  assert.deepEqual((out.messages as { content: unknown[] }[])[0].content, [
    { type: "thinking", thinking: "a", signature: "S" },
    { type: "redacted_thinking", data: "R" },
    { type: "text", text: "done" },
  ]);
});

// ---- upstream request ----

Deno.test("encodeRequest: turns, tool results first, hoisted system, ids and arguments", () => {
  const out = codec.encodeRequest(
    irRequest({
      system: [{ type: "text", text: "S1" }],
      messages: [
        { role: "user", parts: [{ type: "text", text: "q" }] },
        {
          role: "assistant",
          parts: [
            { type: "text", text: "" },
            { type: "tool_call", id: "call.1", name: "f", arguments: "not json" },
            { type: "tool_call", id: "c2", name: "patch", arguments: "*** Begin", kind: "custom" },
          ],
        },
        { role: "system", parts: [{ type: "text", text: "S2" }] },
        { role: "user", parts: [{ type: "text", text: "also" }] },
        {
          role: "tool",
          parts: [{
            type: "tool_result",
            callId: "call.1",
            content: [{ type: "text", text: "r" }],
          }],
        },
        {
          role: "user",
          parts: [{ type: "image", source: { kind: "url", url: "data:image/png;base64,AAA=" } }],
        },
      ],
    }),
    ENC,
  );
  assert.deepEqual(out.system, [{ type: "text", text: "S1" }, { type: "text", text: "S2" }]);
  assert.deepEqual(out.messages, [
    { role: "user", content: [{ type: "text", text: "q" }] },
    {
      role: "assistant",
      content: [
        { type: "tool_use", id: "call_1", name: "f", input: { raw: "not json" } },
        { type: "tool_use", id: "c2", name: "patch", input: { input: "*** Begin" } },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_1", content: [{ type: "text", text: "r" }] },
        { type: "text", text: "also" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: "AAA=" } },
      ],
    },
  ]);
  assert.equal(out.max_tokens, 4096);
});

Deno.test("encodeRequest: thinking budgets, forced tools and sampling", () => {
  const enc = (over: Partial<ir.Request>) => codec.encodeRequest(irRequest(over), ENC);
  // Effort without a client limit: the budget comes on top of the default answer allowance.
  const high = enc({ reasoning: { effort: "high" }, temperature: 0.3, topK: 5, topP: 0.9 });
  assert.deepEqual(high.thinking, { type: "enabled", budget_tokens: 16384 });
  assert.equal(high.max_tokens, 4096 + 16384);
  assert.equal(high.temperature, undefined);
  assert.equal(high.top_k, undefined);
  assert.equal(high.top_p, undefined);
  // A client limit caps effort budgets at half of it, explicit ones just below it.
  assert.deepEqual(enc({ reasoning: { effort: "max" }, maxTokens: 5000 }).thinking, {
    type: "enabled",
    budget_tokens: 2500,
  });
  assert.deepEqual(enc({ reasoning: { budgetTokens: 9000 }, maxTokens: 5000 }).thinking, {
    type: "enabled",
    budget_tokens: 4999,
  });
  // Budgets below Anthropic's minimum are raised to it.
  assert.deepEqual(enc({ reasoning: { budgetTokens: 300 }, maxTokens: 5000 }).thinking, {
    type: "enabled",
    budget_tokens: 1024,
  });
  // A limit with no room for the minimum budget means no thinking (sampling then passes).
  const small = enc({ reasoning: { budgetTokens: 512 }, maxTokens: 1024, temperature: 0 });
  assert.equal(small.thinking, undefined);
  assert.equal(small.temperature, 0);
  // Adaptive thinking carries the effort in output_config.
  const adaptive = enc({
    reasoning: { adaptive: true, effort: "minimal", includeThoughts: false },
  });
  assert.deepEqual(adaptive.thinking, { type: "adaptive", display: "omitted" });
  assert.deepEqual(adaptive.output_config, { effort: "low" });
  // Off stays off, and sampling passes.
  const off = enc({ reasoning: { effort: "none" }, temperature: 0.3 });
  assert.deepEqual(off.thinking, { type: "disabled" });
  assert.equal(off.temperature, 0.3);
  // Anthropic refuses thinking with a forced tool: the forced tool wins.
  const forced = enc({
    reasoning: { effort: "high" },
    tools: [{ name: "f" }],
    toolChoice: { type: "required" },
    parallelToolCalls: false,
  });
  assert.equal(forced.thinking, undefined);
  assert.deepEqual(forced.tool_choice, { type: "any", disable_parallel_tool_use: true });
});

Deno.test("encodeRequest rejects what Anthropic cannot express, drops what is advisory", () => {
  const enc = (over: Partial<ir.Request>) => () => codec.encodeRequest(irRequest(over), ENC);
  rejects(enc({ n: 2 }), /n > 1.*route "claude-\*" → up \(messages\)/, "n");
  rejects(enc({ presencePenalty: 0.5 }), /presence_penalty/, "presence_penalty");
  rejects(
    enc({ responseFormat: { type: "json_object" } }),
    /JSON mode without a schema/,
    "response_format",
  );
  rejects(
    enc({ messages: [{ role: "user", parts: [{ type: "audio", data: "AA", format: "wav" }] }] }),
    /audio input/,
  );
  const out = enc({ n: 1, seed: 7, frequencyPenalty: 0, metadata: { a: "b" }, user: "u" })();
  assert.equal(out.seed, undefined);
  assert.deepEqual(out.metadata, { user_id: "u" });
});

// ---- upstream response and stream ----

Deno.test("decodeResponse: usage totals include cache, custom tools unwrap", () => {
  const res = codec.decodeResponse({
    id: "msg_1",
    model: "claude",
    content: [{ type: "tool_use", id: "t", name: "apply_patch", input: { input: "*** Begin" } }],
    stop_reason: "end_turn",
    usage: {
      input_tokens: 5,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 20,
      output_tokens: 7,
    },
  }, { ...DEC, customTools: ["apply_patch"] });
  assert.equal(res.finish, "tool_calls");
  assert.deepEqual(res.usage, {
    inputTokens: 125,
    cacheReadTokens: 100,
    cacheWriteTokens: 20,
    outputTokens: 7,
  });
  assert.deepEqual(res.parts[0], {
    type: "tool_call",
    id: "t",
    name: "apply_patch",
    arguments: "*** Begin",
    kind: "custom",
  });
  const client = codec.encodeResponse(res, CLIENT) as { usage: Record<string, number> };
  assert.equal(client.usage.input_tokens, 5);
});

const sse = (data: Record<string, unknown>): SseEvent => ({
  event: String(data.type),
  data: JSON.stringify(data),
});

Deno.test("decodeStream: skips server blocks, remaps indexes, finishes only on message_stop", async () => {
  const events = await pipe([
    sse({
      type: "message_start",
      message: { id: "msg_1", model: "c", usage: { input_tokens: 3 } },
    }),
    sse({
      type: "content_block_start",
      index: 0,
      content_block: { type: "server_tool_use", id: "s" },
    }),
    sse({ type: "content_block_stop", index: 0 }),
    sse({
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "t", name: "apply_patch", input: {} },
    }),
    sse({
      type: "content_block_delta",
      index: 1,
      delta: { type: "input_json_delta", partial_json: '{"input":"a\\n' },
    }),
    sse({
      type: "content_block_delta",
      index: 1,
      delta: { type: "input_json_delta", partial_json: 'b"}' },
    }),
    sse({ type: "content_block_stop", index: 1 }),
    sse({ type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 9 } }),
  ], codec.decodeStream({ ...DEC, customTools: ["apply_patch"] }));
  assert.deepEqual(events.slice(1), [
    {
      type: "part_start",
      index: 0,
      part: { type: "tool_call", id: "t", name: "apply_patch", kind: "custom" },
    },
    { type: "arguments_delta", index: 0, json: "a\nb" },
    { type: "part_stop", index: 0 },
  ]);
  const done = await pipe([sse({ type: "message_stop" })], codec.decodeStream(DEC));
  assert.equal(done[0].type, "finish");
});

Deno.test("decodeStream: an in-stream error event becomes an IR error", async () => {
  const events = await pipe(
    [sse({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })],
    codec.decodeStream(DEC),
  );
  assert.deepEqual(events, [{
    type: "error",
    status: 529,
    kind: "overloaded",
    message: "Overloaded",
  }]);
});

// ---- client stream ----

Deno.test("encodeStream: one block at a time, sequential indexes, carriers and custom input", async () => {
  const gemini: ir.Signature = { family: "gemini", value: "G" };
  const events = await pipe<ir.StreamEvent, SseEvent>([
    { type: "start", id: "r1", model: "g", created: 1 },
    { type: "part_start", index: 0, part: { type: "thinking" } },
    { type: "thinking_delta", index: 0, text: "t" },
    { type: "signature", index: 0, signature: gemini },
    { type: "part_stop", index: 0 },
    { type: "part_start", index: 1, part: { type: "text" } },
    { type: "text_delta", index: 1, text: "hi" },
    { type: "signature", index: 1, signature: gemini },
    { type: "part_stop", index: 1 },
    {
      type: "part_start",
      index: 2,
      part: { type: "tool_call", id: "c", name: "patch", kind: "custom" },
    },
    { type: "arguments_delta", index: 2, json: 'line "1"\n' },
    { type: "part_stop", index: 2 },
    {
      type: "finish",
      reason: "stop",
      usage: { inputTokens: 10, cacheReadTokens: 4, outputTokens: 3 },
    },
  ], codec.encodeStream(CLIENT));
  for (const e of events) assert.equal(e.event, JSON.parse(e.data).type);
  const data = events.map((e) => JSON.parse(e.data));
  assert.deepEqual(data.map((d) => d.type), [
    "message_start",
    ...["content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"],
    ...["content_block_start", "content_block_delta", "content_block_stop"],
    ...["content_block_start", "content_block_delta", "content_block_stop"],
    ...["content_block_start", "content_block_delta", "content_block_delta", "content_block_delta"],
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  assert.equal(data[0].message.id, "msg_r1");
  assert.equal(data[0].message.model, "client-model");
  // Blocks open and close in order: 0 thinking, 1 text, 2 carrier, 3 tool_use.
  const starts = data.filter((d) => d.type === "content_block_start");
  assert.deepEqual(starts.map((d) => [d.index, d.content_block.type]), [
    [0, "thinking"],
    [1, "text"],
    [2, "thinking"],
    [3, "tool_use"],
  ]);
  assert.equal(data[3].delta.signature, "gwsig1:gemini:G");
  assert.equal(data[9].delta.signature, "gwsig1:gemini:attached:G");
  const json = data.filter((d) => d.index === 3 && d.delta).map((d) => d.delta.partial_json).join(
    "",
  );
  assert.deepEqual(JSON.parse(json), { input: 'line "1"\n' });
  const delta = data.at(-2);
  assert.equal(delta.delta.stop_reason, "tool_use");
  assert.deepEqual(delta.usage, {
    input_tokens: 6,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 4,
    output_tokens: 3,
  });
});

Deno.test("encodeStream: error event in the Anthropic dialect, nothing terminal without finish", async () => {
  const events = await pipe<ir.StreamEvent, SseEvent>([
    { type: "start", id: "msg_9", model: "g", created: 1 },
    { type: "part_start", index: 0, part: { type: "text" } },
    { type: "error", status: 529, kind: "overloaded", message: "busy" },
  ], codec.encodeStream(CLIENT));
  const last = events.at(-1)!;
  assert.equal(last.event, "error");
  assert.deepEqual(JSON.parse(last.data), {
    type: "error",
    error: { type: "overloaded_error", message: "busy" },
  });
  const open = await pipe<ir.StreamEvent, SseEvent>(
    [{ type: "start", id: "msg_9", model: "g", created: 1 }],
    codec.encodeStream(CLIENT),
  );
  assert.deepEqual(open.map((e) => e.event), ["message_start"]);
});
