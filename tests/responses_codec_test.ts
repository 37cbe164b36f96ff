import assert from "node:assert/strict";
import { responsesCodec as codec } from "../plugins/responses/codec.ts";
import { parseRequest } from "../plugins/responses/schema.ts";
import { GatewayError } from "../src/kit/errors.ts";
import type * as ir from "../src/kit/ir.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import { pipe, rejects } from "./codec_helpers.ts";

const DECODE = { now: 1700000000, id: "gw_test" };
const ENCODE = { model: "up", route: `"gpt-*" → up (responses)`, defaultMaxTokens: 4096 };

const sse = (data: Record<string, unknown>): SseEvent => ({
  event: String(data.type),
  data: JSON.stringify(data),
});

Deno.test("parseRequest names the first bad field", () => {
  rejects(
    () => parseRequest({ input: [{ role: "user", content: [{ type: "input_text", text: 5 }] }] }),
    "input[0].content[0].text: expected string, received number",
    "input[0].content[0].text",
  );
  rejects(
    () => parseRequest({ input: [{ role: "user", content: 5 }] }),
    "input[0].content: expected string or array",
  );
  rejects(
    () =>
      parseRequest({
        input: [{ type: "function_call", call_id: 1, name: "f", arguments: "{}" }],
      }),
    "input[0].call_id: expected string, received number",
  );
  rejects(
    () =>
      parseRequest({
        tools: [{ type: "namespace", name: "functions", tools: [{ type: "function" }] }],
      }),
    "tools[0].tools[0].name: required",
  );
  rejects(() => parseRequest({ tool_choice: "sometimes" }), /^tool_choice: expected "none" or/);
  rejects(() => parseRequest({ max_output_tokens: 1.5 }), /^max_output_tokens: /);
  rejects(() => parseRequest([]), "body: expected object, received array");
});

Deno.test("parseRequest lets unknown items, parts and fields through", () => {
  const body = {
    model: "m",
    input: [
      { type: "web_search_call", id: "ws_1", status: "completed" },
      { role: "user", content: [{ type: "input_audio", input_audio: {} }], phase: null },
      {
        type: "message",
        role: "developer",
        content: "x",
        internal_chat_message_metadata_passthrough: {},
      },
    ],
    tools: [{ type: "web_search", filters: null }],
    tool_choice: { type: "mcp", server_label: "s" },
    brand_new_field: { nested: true },
  };
  assert.deepEqual(parseRequest(body), body);
});

const codexTools = {
  type: "additional_tools",
  role: "developer",
  tools: [{
    type: "namespace",
    name: "functions",
    tools: [
      { type: "function", name: "shell", parameters: { type: "object", properties: {} } },
      {
        type: "custom",
        name: "apply_patch",
        description: "Edit files.",
        format: { type: "grammar", syntax: "lark", definition: "start: x" },
      },
    ],
  }],
};

Deno.test("decodeRequest flattens Codex's additional_tools namespace", () => {
  const req = codec.decodeRequest({ input: [codexTools, { role: "user", content: "hi" }] }, "m");
  assert.deepEqual(req.tools, [
    {
      name: "shell",
      kind: "function",
      parameters: { type: "object", properties: {} },
      namespace: "functions",
    },
    {
      name: "apply_patch",
      kind: "custom",
      description:
        "Edit files.\n\nThe input is free text, not JSON, and must match this lark grammar:\nstart: x",
      namespace: "functions",
    },
  ]);
  assert.deepEqual(req.messages, [{ role: "user", parts: [{ type: "text", text: "hi" }] }]);
});

Deno.test("decodeRequest keeps hosted tools apart, with their options and a forced choice", () => {
  const req = codec.decodeRequest({
    input: [
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search" } },
      { role: "user", content: "x" },
    ],
    tools: [
      { type: "file_search", vector_store_ids: [] },
      {
        type: "web_search_preview",
        user_location: { type: "approximate", city: "Paris", region: null },
        search_context_size: "high",
      },
    ],
    tool_choice: { type: "web_search_preview" },
  }, "m");
  assert.deepEqual(req.hostedTools, [
    { name: "file_search", field: "tools[0]" },
    {
      name: "web_search_preview",
      field: "tools[1]",
      kind: "web_search",
      userLocation: { city: "Paris" },
      contextSize: "high",
    },
  ]);
  assert.equal(req.hostedChoice, "web_search_preview");
  assert.equal(req.toolChoice, undefined);
  assert.equal(req.tools, undefined);
  assert.deepEqual(req.messages, [{ role: "user", parts: [{ type: "text", text: "x" }] }]);
  rejects(
    () => codec.decodeRequest({ input: "x", tool_choice: { type: "image_generation" } }, "m"),
    'tool_choice: forces the hosted tool "image_generation", which tools does not declare',
    "tool_choice",
  );
});

Deno.test("decodeRequest rejects what needs server state", () => {
  rejects(
    () => codec.decodeRequest({ input: "x", conversation: "conv_1" }, "m"),
    /^conversation: /,
  );
  rejects(() => codec.decodeRequest({ input: "x", prompt: { id: "pmpt_1" } }, "m"), /^prompt: /);
  rejects(
    () => codec.decodeRequest({ input: [{ type: "item_reference", id: "msg_1" }] }, "m"),
    /^input\[0\]: item_reference/,
  );
  rejects(
    () =>
      codec.decodeRequest({
        input: [{ type: "compaction_trigger" }, { role: "user", content: "x" }],
      }, "m"),
    "input[0]: compaction_trigger must be the last input item",
  );
});

Deno.test("decodeRequest: leading developer messages are the system prompt, later ones stay", () => {
  const req = codec.decodeRequest({
    instructions: "A",
    input: [
      { role: "developer", content: "B" },
      { role: "user", content: "hi" },
      { role: "system", content: [{ type: "input_text", text: "C" }] },
    ],
  }, "m");
  assert.deepEqual(req.system, [{ type: "text", text: "A" }, { type: "text", text: "B" }]);
  assert.deepEqual(req.messages[1], { role: "system", parts: [{ type: "text", text: "C" }] });
});

/** A response with every kind of signed thinking, and a Gemini-signed call. */
const signedResponse: ir.Response = {
  id: "msg_1",
  model: "claude",
  created: 1,
  finish: "tool_calls",
  parts: [
    { type: "thinking", text: "first", signature: { family: "anthropic", value: "sigA" } },
    { type: "redacted_thinking", data: "opaque", family: "anthropic" },
    { type: "thinking", text: "", signature: { family: "anthropic", value: "sigB" } },
    { type: "text", text: "Checking." },
    {
      type: "tool_call",
      id: "call_0",
      name: "shell",
      arguments: '{"cmd":"ls"}',
      kind: "function",
      signature: { family: "gemini", value: "gsig" },
    },
    {
      type: "tool_call",
      id: "call_1",
      name: "apply_patch",
      arguments: "*** Begin Patch",
      kind: "custom",
    },
  ],
};

Deno.test("signatures survive the round trip through a Responses client", () => {
  const tools: ir.Tool[] = [
    { name: "shell", kind: "function", namespace: "functions" },
    { name: "apply_patch", kind: "custom", namespace: "functions" },
  ];
  const res = codec.encodeResponse(signedResponse, { model: "client", tools }) as {
    id: string;
    output: Record<string, unknown>[];
  };
  assert.equal(res.id, "resp_msg_1");
  assert.deepEqual(res.output.map((i) => i.id), [
    "rs_msg_1_0",
    "rs_msg_1_1",
    "rs_msg_1_2",
    "msg_msg_1_3",
    "fc_msg_1_4",
    "rs_msg_1_5",
    "ctc_msg_1_6",
  ]);
  assert.equal(res.output[0].encrypted_content, "gwsig1:anthropic:sigA");
  assert.equal(res.output[1].encrypted_content, "gwsig1:anthropic:redacted:opaque");
  assert.equal(res.output[5].encrypted_content, "gwsig1:gemini:attached:gsig");
  assert.equal(res.output[4].namespace, "functions");
  assert.deepEqual(res.output[6], {
    id: "ctc_msg_1_6",
    type: "custom_tool_call",
    status: "completed",
    call_id: "call_1",
    input: "*** Begin Patch",
    name: "apply_patch",
    namespace: "functions",
  });

  // Codex replays the output items; they decode to the same parts.
  const req = codec.decodeRequest({ input: [{ role: "user", content: "go" }, ...res.output] }, "m");
  assert.deepEqual(req.messages[1], { role: "assistant", parts: signedResponse.parts });
});

Deno.test("a tool-call signature from Gemini's OpenAI-compatible chat API survives too", () => {
  const call: ir.ToolCallPart = {
    type: "tool_call",
    id: "function-call-1",
    name: "f",
    arguments: "{}",
    kind: "function",
    signature: { family: "openai", value: "CiQB" },
  };
  const res = codec.encodeResponse(
    { id: "r", model: "m", created: 1, finish: "tool_calls", parts: [call] },
    { model: "m" },
  ) as { output: Record<string, unknown>[] };
  assert.equal(res.output[1].encrypted_content, "attached:CiQB");
  const req = codec.decodeRequest({ input: res.output }, "m");
  assert.deepEqual(req.messages, [{ role: "assistant", parts: [call] }]);
});

Deno.test("OpenAI reasoning replays to a Responses upstream; other families' stays behind", () => {
  const body = codec.encodeRequest({
    model: "m",
    system: [],
    stream: false,
    messages: [{
      role: "assistant",
      parts: [
        { type: "thinking", text: "t", signature: { family: "anthropic", value: "s" } },
        { type: "redacted_thinking", data: "gAAA", family: "openai" },
        { type: "thinking", text: "sum", signature: { family: "openai", value: "gBBB" } },
        { type: "text", text: "ok" },
      ],
    }],
    reasoning: { effort: "high", includeThoughts: true },
  }, ENCODE);
  assert.deepEqual(body.input, [
    { type: "reasoning", summary: [], encrypted_content: "gAAA" },
    {
      type: "reasoning",
      summary: [{ type: "summary_text", text: "sum" }],
      encrypted_content: "gBBB",
    },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "ok" }] },
  ]);
  assert.deepEqual(body.reasoning, { effort: "high", summary: "auto" });
  assert.deepEqual(body.include, ["reasoning.encrypted_content"]);
});

Deno.test("encodeRequest rejects what Responses cannot express, naming field and route", () => {
  const base: ir.Request = { model: "m", system: [], messages: [], stream: false };
  rejects(
    () => codec.encodeRequest({ ...base, stop: ["END"] }, ENCODE),
    `stop sequences are not supported by the upstream of route "gpt-*" → up (responses) (field: stop)`,
    "stop",
  );
  rejects(() => codec.encodeRequest({ ...base, n: 2 }, ENCODE), /\(field: n\)$/);
  const dropped: string[] = [];
  codec.encodeRequest({ ...base, topK: 5, seed: 1 }, { ...ENCODE, dropped });
  assert.deepEqual(dropped, ["seed", "top_k"], "sampling hints are dropped and reported");
  const audio: ir.Message = { role: "user", parts: [{ type: "audio", data: "AA", format: "wav" }] };
  rejects(
    () => codec.encodeRequest({ ...base, messages: [audio] }, ENCODE),
    /^audio input .*\(field: messages\[0\]\.parts\[0\]\)$/,
  );
});

Deno.test("compaction: one item carrying the summary, replayed as a user message", () => {
  const trigger = codec.decodeRequest({
    input: [{ role: "user", content: "hi" }, { type: "compaction_trigger" }],
    tools: [{ type: "function", name: "f" }],
  }, "m");
  assert.equal(trigger.compaction, true);
  assert.deepEqual(trigger.toolChoice, { type: "none" });
  assert.match((trigger.messages.at(-1)!.parts[0] as ir.TextPart).text, /^Write a concise summary/);

  const res = codec.encodeResponse({
    id: "r1",
    model: "m",
    created: 1,
    finish: "stop",
    parts: [{ type: "thinking", text: "hmm" }, { type: "text", text: "Goals: ünïcode ✓" }],
  }, { model: "m", compaction: true }) as { output: { encrypted_content: string }[] };
  assert.equal(res.output.length, 1);
  assert.deepEqual(Object.keys(res.output[0]), ["id", "type", "encrypted_content"]);
  assert.match(res.output[0].encrypted_content, /^gwcmp1:/);

  const next = codec.decodeRequest(
    { input: [res.output[0], { role: "user", content: "more" }] },
    "m",
  );
  assert.deepEqual(next.messages[0], {
    role: "user",
    parts: [{ type: "text", text: "Summary of the earlier conversation:\nGoals: ünïcode ✓" }],
  });
});

Deno.test("encodeStream: SDK event order, increasing sequence numbers, full terminal output", async () => {
  const events: ir.StreamEvent[] = [
    { type: "start", id: "abc", model: "up", created: 5 },
    { type: "part_start", index: 0, part: { type: "thinking" } },
    { type: "thinking_delta", index: 0, text: "Think" },
    { type: "signature", index: 0, signature: { family: "anthropic", value: "S" } },
    { type: "part_stop", index: 0 },
    { type: "part_start", index: 1, part: { type: "text" } },
    { type: "text_delta", index: 1, text: "Hi" },
    { type: "part_stop", index: 1 },
    {
      type: "part_start",
      index: 2,
      part: { type: "tool_call", id: "c1", name: "patch", kind: "custom" },
    },
    { type: "arguments_delta", index: 2, json: "*** Begin" },
    { type: "part_stop", index: 2 },
    { type: "finish", reason: "tool_calls", usage: { inputTokens: 10, outputTokens: 3 } },
  ];
  const out = await pipe(events, codec.encodeStream({ model: "client" }));
  const data = out.map((e) => JSON.parse(e.data));
  assert.deepEqual(out.map((e) => e.event), data.map((d) => d.type));
  assert.deepEqual(data.map((d) => d.sequence_number), data.map((_, i) => i));
  assert.deepEqual(data.map((d) => d.type), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.output_item.done",
    "response.completed",
  ]);
  const done = data.filter((d) => d.type === "response.output_item.done");
  assert.deepEqual(done.map((d) => d.output_index), [0, 1, 2]);
  const final = data.at(-1).response;
  assert.equal(final.id, "resp_abc");
  assert.equal(final.model, "client");
  assert.deepEqual(final.output, done.map((d) => d.item));
  assert.equal(final.output[0].encrypted_content, "gwsig1:anthropic:S");
  assert.equal(final.usage.total_tokens, 13);
});

Deno.test("encodeStream: no terminal event without finish; errors in the Responses shape", async () => {
  const start: ir.StreamEvent = { type: "start", id: "x", model: "m", created: 0 };
  const cut = await pipe(
    [start, { type: "part_start", index: 0, part: { type: "text" } }],
    codec.encodeStream({ model: "m" }),
  );
  assert.deepEqual(cut.map((e) => e.event), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
  ]);
  const failed = await pipe(
    [start, { type: "error", status: 529, kind: "overloaded", message: "Overloaded" }],
    codec.encodeStream({ model: "m" }),
  );
  assert.deepEqual(JSON.parse(failed[2].data), {
    type: "error",
    sequence_number: 2,
    code: "service_unavailable_error",
    message: "Overloaded",
    param: null,
  });
});

Deno.test("decodeStream: parts with consistent indexes, signature from the item's done", async () => {
  const item = { id: "fc_1", type: "function_call", call_id: "call_1", name: "f", arguments: "" };
  const events = await pipe([
    sse({ type: "response.created", response: { id: "resp_1", model: "gpt", created_at: 9 } }),
    sse({
      type: "response.output_item.added",
      output_index: 0,
      item: { id: "rs_1", type: "reasoning", summary: [] },
    }),
    sse({
      type: "response.reasoning_summary_text.delta",
      output_index: 0,
      summary_index: 0,
      delta: "a",
    }),
    sse({
      type: "response.reasoning_summary_text.delta",
      output_index: 0,
      summary_index: 1,
      delta: "b",
    }),
    sse({
      type: "response.output_item.done",
      output_index: 0,
      item: { id: "rs_1", type: "reasoning", summary: [], encrypted_content: "ENC" },
    }),
    sse({ type: "response.output_item.added", output_index: 1, item }),
    sse({ type: "response.function_call_arguments.delta", output_index: 1, delta: '{"a"' }),
    sse({ type: "response.function_call_arguments.delta", output_index: 1, delta: ":1}" }),
    sse({ type: "response.function_call_arguments.done", output_index: 1, arguments: '{"a":1}' }),
    sse({
      type: "response.output_item.done",
      output_index: 1,
      item: { ...item, arguments: '{"a":1}' },
    }),
    // A server that skips deltas: the item arrives whole.
    sse({
      type: "response.output_item.done",
      output_index: 2,
      item: { type: "message", role: "assistant", content: [{ type: "output_text", text: "ok" }] },
    }),
    sse({
      type: "response.completed",
      response: { status: "completed", usage: { input_tokens: 4, output_tokens: 2 } },
    }),
  ], codec.decodeStream(DECODE));
  assert.deepEqual(events, [
    { type: "start", id: "resp_1", model: "gpt", created: 9 },
    { type: "part_start", index: 0, part: { type: "thinking" } },
    { type: "thinking_delta", index: 0, text: "a" },
    { type: "thinking_delta", index: 0, text: "\n\n" },
    { type: "thinking_delta", index: 0, text: "b" },
    { type: "signature", index: 0, signature: { family: "openai", value: "ENC" } },
    { type: "part_stop", index: 0 },
    {
      type: "part_start",
      index: 1,
      part: { type: "tool_call", id: "call_1", name: "f", kind: "function" },
    },
    { type: "arguments_delta", index: 1, json: '{"a"' },
    { type: "arguments_delta", index: 1, json: ":1}" },
    { type: "part_stop", index: 1 },
    { type: "part_start", index: 2, part: { type: "text" } },
    { type: "text_delta", index: 2, text: "ok" },
    { type: "part_stop", index: 2 },
    { type: "finish", reason: "tool_calls", usage: { inputTokens: 4, outputTokens: 2 } },
  ]);
});

Deno.test("decodeStream: finish only on the real end; failures become IR errors", async () => {
  const created = sse({ type: "response.created", response: { id: "r" } });
  const cut = await pipe(
    [created, sse({ type: "response.in_progress", response: {} })],
    codec.decodeStream(DECODE),
  );
  assert.deepEqual(cut.map((e) => e.type), ["start"]);

  const incomplete = await pipe([
    created,
    sse({
      type: "response.incomplete",
      response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } },
    }),
  ], codec.decodeStream(DECODE));
  assert.deepEqual(incomplete.at(-1), { type: "finish", reason: "length" });

  const failed = await pipe([
    created,
    sse({
      type: "response.failed",
      response: { status: "failed", error: { code: "rate_limit_exceeded", message: "slow down" } },
    }),
  ], codec.decodeStream(DECODE));
  assert.deepEqual(failed.at(-1), {
    type: "error",
    status: 429,
    kind: "rate_limit",
    message: "slow down",
  });
});

Deno.test("decodeResponse: a failed response is an upstream error", () => {
  assert.throws(
    () =>
      codec.decodeResponse(
        { status: "failed", error: { code: "server_error", message: "boom" } },
        DECODE,
      ),
    (e) => e instanceof GatewayError && e.status === 500 && e.message === "boom",
  );
});
