/**
 * The Gemini Interactions codec (plugins/interactions, not yet registered): unit tests of its
 * mappings, and @google/genai's `client.interactions` driven against the mock Interactions
 * upstream, whose answers the codec's decoders read.
 */
import assert from "node:assert/strict";
import type * as ir from "../src/kit/ir.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import { formatSse } from "../src/kit/sse.ts";
import { interactionsCodec as codec } from "../plugins/interactions/codec.ts";
import { parseRequest } from "../plugins/interactions/schema.ts";
import { interactionsDialect } from "../plugins/interactions/dialect.ts";
import { GoogleGenAI } from "./sdk/deps.ts";
import { startMockUpstream, TOKENS } from "./mock/upstream.ts";
import { SEARCH_CITED, SEARCH_RESULTS } from "./mock/scenario.ts";
import { pipe, rejects } from "./codec_helpers.ts";

const ENCODE = {
  model: "gemini-x",
  route: `"g-*" → gemini (interactions)`,
  defaultMaxTokens: 1024,
};
const DECODE = { now: 1700000000, id: "gw1" };
const CLIENT = { model: "client-model", now: () => 1700000001 };

const req = (messages: ir.Message[], extra: Partial<ir.Request> = {}): ir.Request => ({
  model: "m",
  system: [],
  messages,
  stream: false,
  ...extra,
});

const sig = (family: string, value: string): ir.Signature => ({ family, value });

// ---- validation and refusals ----

Deno.test("interactions: parseRequest names the first bad field", () => {
  rejects(
    () => parseRequest({ model: "m", input: [{ type: "text", text: "a" }, { type: "text" }] }),
    /^input\[1\]\.text: required$/,
    "input[1].text",
  );
  rejects(
    () => parseRequest({ model: "m", generation_config: { thinking_level: "extreme" } }),
    /^generation_config\.thinking_level: expected "minimal" or "low" or "medium" or "high"$/,
  );
  rejects(
    () => parseRequest({ model: "m", input: [{ type: "function_call", name: "f" }] }),
    /^input\[0\]\.id: required$/,
  );
  rejects(
    () => parseRequest({ model: "m", system_instruction: { parts: [] } }),
    /^system_instruction: expected string/,
  );
});

Deno.test("interactions: agent, background, stored chains and non-text outputs are refused by name", () => {
  const decode = (body: Record<string, unknown>) => () => codec.decodeRequest(body, "m");
  rejects(
    decode({ agent: "deep-research", input: "hi" }),
    /^agent: agent interactions only work with an interactions upstream$/,
    "agent",
  );
  rejects(decode({ input: "hi" }), "model: required", "model");
  rejects(decode({ model: "m", input: "hi", background: true }), /^background: /, "background");
  rejects(
    decode({ model: "m", input: "hi", previous_interaction_id: "v1_x" }),
    /^previous_interaction_id: /,
    "previous_interaction_id",
  );
  rejects(
    decode({ model: "m", input: [{ type: "video", uri: "https://x/v.mp4" }] }),
    /^input\[0\]: video inputs only work with an interactions upstream$/,
  );
  rejects(
    decode({ model: "m", input: "hi", response_format: { type: "image" } }),
    /^response_format: image outputs /,
  );
  rejects(
    decode({
      model: "m",
      input: [{ type: "user_input", content: [] }, { type: "code_execution_call", id: "c" }],
    }),
    /^input\[1\]\.type: code_execution_call steps only work with an interactions upstream$/,
  );
});

// ---- ingress: request ----

Deno.test("interactions: text input, system instruction, config and tools to IR", () => {
  const r = codec.decodeRequest({
    model: "m",
    input: "What is the weather?",
    system_instruction: "Be brief.",
    tools: [
      { type: "function", name: "get_weather", description: "d", parameters: { type: "object" } },
      { type: "google_search" },
      { type: "code_execution" },
    ],
    generation_config: {
      temperature: 0.2,
      max_output_tokens: 99,
      thinking_level: "low",
      thinking_summaries: "auto",
      tool_choice: { allowed_tools: { mode: "any", tools: ["get_weather"] } },
    },
    response_format: { type: "text", mime_type: "application/json", schema: { type: "object" } },
    stream: true,
  }, "m");
  assert.deepEqual(r.system, [{ type: "text", text: "Be brief." }]);
  assert.deepEqual(r.messages, [{
    role: "user",
    parts: [{ type: "text", text: "What is the weather?" }],
  }]);
  assert.deepEqual(r.tools, [{
    name: "get_weather",
    description: "d",
    parameters: { type: "object" },
  }]);
  assert.deepEqual(r.hostedTools, [
    { name: "google_search", field: "tools[1]", kind: "web_search" },
    { name: "code_execution", field: "tools[2]" },
  ]);
  assert.deepEqual(r.toolChoice, { type: "tool", name: "get_weather" });
  assert.deepEqual(r.reasoning, { effort: "low", includeThoughts: true });
  assert.deepEqual(r.responseFormat, { type: "json_schema", schema: { type: "object" } });
  assert.equal(r.maxTokens, 99);
  assert.equal(r.stream, true);
});

Deno.test("interactions: a history of steps; a summary-less signed thought signs the call after it", () => {
  const r = codec.decodeRequest({
    model: "m",
    input: [
      { type: "user_input", content: [{ type: "text", text: "go" }] },
      { type: "thought", signature: "T1", summary: [{ type: "text", text: "hmm" }] },
      { type: "thought", signature: "C1" },
      { type: "function_call", id: "fc_1", name: "f", arguments: { a: 1 } },
      { type: "function_result", call_id: "fc_1", name: "f", result: "ok", is_error: true },
      { type: "model_output", content: [{ type: "text", text: "done" }] },
      { type: "thought", signature: "gwsig1:anthropic:AS" },
    ],
  }, "m");
  assert.deepEqual(r.messages, [
    { role: "user", parts: [{ type: "text", text: "go" }] },
    {
      role: "assistant",
      parts: [
        { type: "thinking", text: "hmm", signature: sig("gemini", "T1") },
        {
          type: "tool_call",
          id: "fc_1",
          name: "f",
          arguments: '{"a":1}',
          signature: sig("gemini", "C1"),
        },
      ],
    },
    {
      role: "tool",
      parts: [{
        type: "tool_result",
        callId: "fc_1",
        name: "f",
        content: [{ type: "text", text: "ok" }],
        isError: true,
      }],
    },
    {
      role: "assistant",
      parts: [
        { type: "text", text: "done" },
        { type: "thinking", text: "", signature: sig("anthropic", "AS") },
      ],
    },
  ]);
});

// ---- ingress: response and stream ----

const answer: ir.Response = {
  id: "up1",
  model: "up",
  created: 1700000000,
  parts: [
    { type: "thinking", text: "think", signature: sig("anthropic", "AS") },
    { type: "text", text: "Calling." },
    {
      type: "tool_call",
      id: "fc_9",
      name: "f",
      arguments: '{"x":1}',
      signature: sig("gemini", "G"),
    },
  ],
  finish: "tool_calls",
  usage: { inputTokens: 11, cacheReadTokens: 3, outputTokens: 12, reasoningTokens: 5 },
};

Deno.test("interactions: an answer ending in a call is requires_action; signatures ride on thought steps", () => {
  const out = codec.encodeResponse(answer, CLIENT) as Record<string, unknown>;
  assert.deepEqual(out, {
    id: "up1",
    model: "client-model",
    status: "requires_action",
    created: "2023-11-14T22:13:20Z",
    updated: "2023-11-14T22:13:21Z",
    steps: [
      {
        type: "thought",
        signature: "gwsig1:anthropic:AS",
        summary: [{ type: "text", text: "think" }],
      },
      { type: "model_output", content: [{ type: "text", text: "Calling." }] },
      { type: "thought", signature: "G" },
      { type: "function_call", id: "fc_9", name: "f", arguments: { x: 1 } },
    ],
    usage: {
      total_input_tokens: 11,
      total_output_tokens: 7,
      total_thought_tokens: 5,
      total_cached_tokens: 3,
      total_tokens: 23,
    },
  });
  // Read back as an upstream's answer, nothing is lost.
  const back = codec.decodeResponse(out, DECODE);
  assert.deepEqual(back.parts, answer.parts);
  assert.equal(back.finish, "tool_calls");
  assert.deepEqual(back.usage, answer.usage);
});

/** The IR events of a whole response, as a decoder would stream them. */
function eventsOf(res: ir.Response): ir.StreamEvent[] {
  const out: ir.StreamEvent[] = [{
    type: "start",
    id: res.id,
    model: res.model,
    created: res.created,
  }];
  res.parts.forEach((p, index) => {
    if (p.type === "thinking") {
      out.push(
        { type: "part_start", index, part: { type: "thinking" } },
        { type: "thinking_delta", index, text: p.text },
        ...(p.signature ? [{ type: "signature" as const, index, signature: p.signature }] : []),
      );
    } else if (p.type === "text") {
      out.push({ type: "part_start", index, part: { type: "text" } }, {
        type: "text_delta",
        index,
        text: p.text,
      });
    } else if (p.type === "tool_call") {
      out.push(
        {
          type: "part_start",
          index,
          part: { type: "tool_call", id: p.id, name: p.name, signature: p.signature },
        },
        { type: "arguments_delta", index, json: p.arguments },
      );
    }
    out.push({ type: "part_stop", index });
  });
  out.push({ type: "finish", reason: res.finish, usage: res.usage });
  return out;
}

Deno.test("interactions: the stream's events, and the codec's decoder reads them back", async () => {
  const sse = await pipe(eventsOf(answer), codec.encodeStream(CLIENT));
  const seen = sse.map((e) => {
    const d = JSON.parse(e.data);
    assert.equal(e.event, d.event_type);
    return d.event_type === "step.start"
      ? `${d.index}:start:${d.step.type}`
      : d.event_type === "step.delta"
      ? `${d.index}:${d.delta.type}`
      : d.event_type === "step.stop"
      ? `${d.index}:stop`
      : d.event_type;
  });
  assert.deepEqual(seen, [
    "interaction.created",
    "interaction.status_update",
    "0:start:thought",
    "0:thought_summary",
    "0:thought_signature",
    "0:stop",
    "1:start:model_output",
    "1:text",
    "1:stop",
    "2:start:thought",
    "2:stop",
    "3:start:function_call",
    "3:arguments_delta",
    "3:stop",
    "interaction.completed",
  ]);
  const completed = JSON.parse(sse.at(-1)!.data);
  assert.equal(completed.interaction.status, "requires_action");
  assert.equal(completed.interaction.usage.total_output_tokens, 7);
  const events = await pipe(sse, codec.decodeStream(DECODE));
  const parts: ir.Part[] = [];
  for (const e of events) {
    if (e.type === "part_start") {
      parts[e.index] = e.part.type === "tool_call"
        ? { ...e.part, arguments: "" }
        : { ...e.part, text: "" } as ir.Part;
    } else if (e.type === "text_delta" || e.type === "thinking_delta") {
      (parts[e.index] as ir.TextPart).text += e.text;
    } else if (e.type === "arguments_delta") {
      (parts[e.index] as ir.ToolCallPart).arguments += e.json;
    } else if (e.type === "signature") (parts[e.index] as ir.ThinkingPart).signature = e.signature;
  }
  assert.deepEqual(parts, answer.parts);
  assert.deepEqual(events.at(-1), { type: "finish", reason: "tool_calls", usage: answer.usage });
  const watch = codec.watch();
  assert.deepEqual(sse.map((e) => watch.inspect(e)), sse.map((_, i) => i === sse.length - 1));
  const kept = watch.usageEvents().map((data) => JSON.parse(data));
  assert.deepEqual(codec.usage({ json: kept }), answer.usage);
});

Deno.test("interactions: a signature that reaches a started step follows it as a thought step", async () => {
  const sse = await pipe([
    { type: "start", id: "r", model: "m", created: 0 },
    { type: "part_start", index: 0, part: { type: "tool_call", id: "c1", name: "f" } },
    { type: "signature", index: 0, signature: sig("gemini", "LATE") },
    { type: "part_stop", index: 0 },
    { type: "finish", reason: "tool_calls" },
  ], codec.encodeStream(CLIENT));
  const steps = sse.map((e) => JSON.parse(e.data)).filter((d) => d.event_type.startsWith("step."));
  assert.deepEqual(steps.map((d) => [d.event_type, d.index, d.step?.type ?? d.delta?.type]), [
    ["step.start", 0, "function_call"],
    ["step.stop", 0, undefined],
    ["step.start", 1, "thought"],
    ["step.stop", 1, undefined],
  ]);
  assert.equal(steps[2].step.signature, "LATE");
});

Deno.test("interactions upstream: an answer's input steps and non-text outputs are skipped", () => {
  const res = codec.decodeResponse({
    id: "v1_a",
    status: "completed",
    steps: [
      { type: "user_input", content: [{ type: "text", text: "draw" }] },
      {
        type: "model_output",
        content: [{ type: "image", data: "AAAA", mime_type: "image/png" }, {
          type: "text",
          text: "Here.",
        }],
      },
      { type: "code_execution_call", id: "x", arguments: {} },
    ],
  }, DECODE);
  assert.deepEqual(res.parts, [{ type: "text", text: "Here." }]);
  assert.equal(res.finish, "stop");
  assert.equal(res.created, DECODE.now);
});

Deno.test("interactions: errors are error events; a cut stream ends with upstream_interrupted", async () => {
  const [event] = await pipe(
    [{ type: "error", status: 429, kind: "rate_limit", message: "slow down" }],
    codec.encodeStream(CLIENT),
  );
  assert.deepEqual(JSON.parse(event.data), {
    event_type: "error",
    error: { code: "RESOURCE_EXHAUSTED", message: "slow down" },
  });
  const cut = interactionsDialect.interruption("upstream went away");
  assert.equal(
    cut,
    'event: error\ndata: {"event_type":"error","error":{"code":"upstream_interrupted","message":"upstream went away"}}\n\n',
  );
  const [decoded] = await pipe(
    [{ event: "error", data: cut.split("data: ")[1].trim() }],
    codec.decodeStream(DECODE),
  );
  assert.deepEqual(decoded, {
    type: "error",
    status: 502,
    kind: "upstream_interrupted",
    message: "upstream went away",
  });
  const google = interactionsDialect.errorBody(
    new (await import("../src/kit/errors.ts")).GatewayError(404, "not_found", "gone"),
  );
  assert.deepEqual(google, { error: { code: 404, message: "gone", status: "NOT_FOUND" } });
});

// ---- upstream: request ----

Deno.test("interactions upstream: history as steps, only Gemini's signatures, store false", () => {
  const body = codec.encodeRequest(
    req([
      { role: "user", parts: [{ type: "text", text: "go" }] },
      {
        role: "assistant",
        parts: [
          { type: "thinking", text: "t", signature: sig("anthropic", "AS") },
          {
            type: "tool_call",
            id: "toolu_1",
            name: "f",
            arguments: '{"a":1}',
            signature: sig("gemini", "G"),
          },
        ],
      },
      {
        role: "tool",
        parts: [{
          type: "tool_result",
          callId: "toolu_1",
          content: [{ type: "text", text: "42" }],
        }],
      },
    ], {
      system: [{ type: "text", text: "Sys" }],
      tools: [{ name: "f", parameters: { type: "object" } }],
      toolChoice: { type: "required" },
      reasoning: { effort: "xhigh", includeThoughts: true },
      hostedTools: [{ name: "web_search", field: "tools[1]", kind: "web_search", maxUses: 2 }],
      stream: true,
    }),
    { ...ENCODE, dropped: [] },
  );
  assert.deepEqual(body, {
    model: "gemini-x",
    input: [
      { type: "user_input", content: [{ type: "text", text: "go" }] },
      { type: "thought", signature: "G" },
      { type: "function_call", id: "toolu_1", name: "f", arguments: { a: 1 } },
      { type: "function_result", call_id: "toolu_1", result: "42" },
    ],
    system_instruction: "Sys",
    tools: [{ type: "function", name: "f", parameters: { type: "object" } }, {
      type: "google_search",
    }],
    stream: true,
    store: false,
    generation_config: { tool_choice: "any", thinking_level: "high", thinking_summaries: "auto" },
  });
  assert.equal(codec.path("gemini-x", true), "/v1beta/interactions");
});

Deno.test("interactions upstream: what it cannot express is a 400, sampling hints are dropped", () => {
  rejects(
    () => codec.encodeRequest(req([], { presencePenalty: 1 }), ENCODE),
    /presence_penalty cannot be expressed by the upstream of route/,
    "presence_penalty",
  );
  const ctx = { ...ENCODE, dropped: [] as string[] };
  codec.encodeRequest(req([], { topK: 3, parallelToolCalls: false }), ctx);
  assert.deepEqual(ctx.dropped, ["top_k", "parallel_tool_calls"]);
});

// ---- the SDK against the mock Interactions upstream ----

Deno.test("interactions: @google/genai create, stream, get and delete against the mock", async () => {
  const mock = await startMockUpstream();
  try {
    const client = new GoogleGenAI({ apiKey: "test-key", httpOptions: { baseUrl: mock.url } });

    const created = await client.interactions.create({ model: "gem-think", input: "hi" });
    assert.equal(created.status, "completed");
    assert.equal(created.output_text, "Hello from interactions mock: hi");
    assert.equal(created.usage?.total_input_tokens, TOKENS.input);
    assert.equal(created.usage?.total_thought_tokens, TOKENS.reasoning);
    assert.equal(mock.requests.at(-1)!.path, "/v1beta/interactions");
    assert.equal(mock.requests.at(-1)!.headers["x-goog-api-key"], "test-key");
    // The codec reads the same body as an upstream answer.
    const decoded = codec.decodeResponse(created as unknown as Record<string, unknown>, DECODE);
    assert.deepEqual(decoded.parts.map((p) => p.type), ["thinking", "text"]);
    assert.equal(decoded.finish, "stop");

    const got = await client.interactions.get(created.id);
    assert.equal(got.output_text, created.output_text);
    assert.equal(mock.requests.at(-1)!.search, "?stream=false");

    const stream = await client.interactions.create({
      model: "gem-think-tool",
      input: "weather?",
      tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }],
      stream: true,
    });
    const events = await Array.fromAsync(stream);
    assert.deepEqual(
      [events[0].event_type, events[1].event_type, events.at(-1)!.event_type],
      ["interaction.created", "interaction.status_update", "interaction.completed"],
    );
    const completed = events.at(-1) as { interaction: { status: string } };
    assert.equal(completed.interaction.status, "requires_action");
    // The codec decodes the mock's stream: thinking, then the call signed by its thought step.
    const sse: SseEvent[] = events.map((e) => ({ event: e.event_type, data: JSON.stringify(e) }));
    const ir = await pipe(sse, codec.decodeStream(DECODE));
    const call = ir.find((e) => e.type === "part_start" && e.part.type === "tool_call");
    assert.ok(call?.type === "part_start" && call.part.type === "tool_call");
    assert.equal(call.part.name, "get_weather");
    assert.deepEqual(call.part.signature, {
      family: "gemini",
      value: btoa("mock-call:gem-think-tool"),
    });
    assert.deepEqual(ir.at(-1), {
      type: "finish",
      reason: "tool_calls",
      usage: { inputTokens: 11, cacheReadTokens: 3, outputTokens: 12, reasoningTokens: 5 },
    });

    // A hosted search: one IR part for the call and its result, and the answer's citation.
    const searched = await client.interactions.create({
      model: "gem-text",
      input: "Déjà vu: deno 3?",
      tools: [{ type: "google_search" }],
    });
    const found = codec.decodeResponse(searched as unknown as Record<string, unknown>, DECODE);
    const text = `Results for "Déjà vu: deno 3?": ${SEARCH_CITED}.`;
    const start = text.indexOf(SEARCH_CITED);
    const [run] = found.parts as ir.HostedCallPart[];
    assert.match(run.id, /^fc_/);
    assert.deepEqual(found.parts, [
      { type: "hosted_call", id: run.id, kind: "web_search", queries: ["Déjà vu: deno 3?"] },
      {
        type: "text",
        text,
        citations: [{
          url: SEARCH_RESULTS[0].url,
          title: SEARCH_RESULTS[0].title,
          start,
          end: start + SEARCH_CITED.length,
        }],
      },
    ]);

    // The vendor's in-stream error ends the stream; the codec reads it as an upstream error.
    const failing = await Array.fromAsync(
      await client.interactions.create({ model: "gem-errevent", input: "hi", stream: true }),
    );
    const last = failing.at(-1)!;
    assert.equal(last.event_type, "error");
    const [failed] = await pipe(
      [{ event: "error", data: JSON.stringify(last) }],
      codec.decodeStream(DECODE),
    );
    assert.deepEqual(failed, {
      type: "error",
      status: 500,
      kind: "upstream",
      message:
        "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    });

    await client.interactions.delete(created.id);
    await assert.rejects(() => client.interactions.get(created.id), /404|not found/i);
  } finally {
    await mock.close();
  }
});

Deno.test("interactions: @google/genai parses the codec's own stream (the interruption included)", async () => {
  const sse = await pipe(eventsOf(answer), codec.encodeStream(CLIENT));
  const text = sse.map(formatSse).join("") + interactionsDialect.interruption("cut");
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (r) => {
    await r.body?.cancel();
    const json = new URL(r.url).searchParams.get("stream") === "false";
    if (json) {
      return Response.json(codec.encodeResponse(answer, CLIENT));
    }
    return new Response(text, { headers: { "content-type": "text/event-stream" } });
  });
  try {
    const client = new GoogleGenAI({
      apiKey: "k",
      httpOptions: { baseUrl: `http://127.0.0.1:${server.addr.port}` },
    });
    const events = await Array.fromAsync(
      await client.interactions.create({ model: "m", input: "hi", stream: true }),
    );
    assert.equal(events.length, sse.length + 1);
    assert.deepEqual(events.at(-1), {
      event_type: "error",
      error: { code: "upstream_interrupted", message: "cut" },
    });
    const got = await client.interactions.get("up1");
    assert.equal(got.status, "requires_action");
    assert.equal(got.output_text, "Calling.");
    assert.equal(got.steps?.length, 4);
  } finally {
    await server.shutdown();
  }
});
