/**
 * Wire-level tests of the mock upstream (tests/mock/upstream.ts), driven with plain fetch and
 * WebSocket: framing, terminal events, scenarios, error envelopes and bookkeeping.
 */
import assert from "node:assert/strict";
import { type MockUpstream, SLOW_MS, startMockUpstream, TOKENS } from "./mock/upstream.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

interface SseRecord {
  event?: string;
  data: string;
}

/** Splits SSE text into records (`sep` is the blank-line separator the vendor uses). */
function records(text: string, sep = "\n\n"): SseRecord[] {
  return text.split(sep).filter((r) => r.trim()).map((r) => {
    const rec: SseRecord = { data: "" };
    for (const line of r.split(/\r?\n/)) {
      if (line.startsWith("event: ")) rec.event = line.slice(7);
      if (line.startsWith("data: ")) rec.data = line.slice(6);
    }
    return rec;
  });
}

const payloads = (recs: SseRecord[]): Json[] =>
  recs.filter((r) => r.data !== "[DONE]").map((r) => JSON.parse(r.data));

/** Reads a body to its end, or to the network error that cut it. */
async function readAll(res: Response): Promise<{ text: string; failed: boolean }> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
    return { text, failed: false };
  } catch {
    return { text, failed: true };
  }
}

function post(mock: MockUpstream, path: string, body: unknown, headers = {}): Promise<Response> {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return fetch(mock.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: text,
  });
}

async function postJson(mock: MockUpstream, path: string, body: unknown, status = 200) {
  const res = await post(mock, path, body);
  const json = await res.json();
  assert.equal(res.status, status, JSON.stringify(json));
  return { res, json };
}

async function postSse(mock: MockUpstream, path: string, body: unknown, sep = "\n\n") {
  const res = await post(mock, path, body);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
  const { text, failed } = await readAll(res);
  return { res, text, failed, recs: records(text, sep) };
}

/** Polls `check` until it holds (or fails after ~2 s). */
async function eventually(check: () => boolean) {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(check());
}

async function withMock(fn: (mock: MockUpstream) => Promise<void>) {
  const mock = await startMockUpstream();
  try {
    await fn(mock);
  } finally {
    await mock.close();
  }
}

const user = (content: unknown) => ({ role: "user", content });

Deno.test("mock upstream: OpenAI chat completions", async (t) => {
  await withMock(async (mock) => {
    const path = "/v1/chat/completions";
    const tools = [{ type: "function", function: { name: "lookup", parameters: {} } }];

    await t.step("stream: data-only records, [DONE], usage chunk", async () => {
      const body = {
        model: "gpt-text",
        messages: [user([{ type: "text", text: "Hi " }, { type: "text", text: "there" }])],
        stream: true,
        stream_options: { include_usage: true },
      };
      const { text, recs } = await postSse(mock, path, body);
      assert.ok(!text.includes("event:"), "chat SSE has no event lines");
      assert.equal(recs.at(-1)!.data, "[DONE]");
      const chunks = payloads(recs);
      assert.deepEqual(chunks[0].choices[0].delta, {
        role: "assistant",
        content: "",
        refusal: null,
      });
      const deltas = chunks.map((c) => c.choices[0]?.delta?.content).filter((c) => c);
      assert.ok(deltas.length >= 3);
      assert.equal(deltas.join(""), "Hello from chat mock: Hi there");
      assert.equal(chunks.at(-2).choices[0].finish_reason, "stop");
      const usage = chunks.at(-1);
      assert.deepEqual(usage.choices, []);
      assert.equal(usage.usage.prompt_tokens, TOKENS.input);
      assert.equal(usage.usage.prompt_tokens_details.cached_tokens, TOKENS.cacheRead);
      assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
      assert.match(chunks[0].id, /^chatcmpl-/);
    });

    await t.step("tool (JSON): tool_calls to the first tool", async () => {
      const { json } = await postJson(mock, path, {
        model: "gpt-tool",
        messages: [user("x")],
        tools,
      });
      const choice = json.choices[0];
      assert.equal(choice.finish_reason, "tool_calls");
      assert.equal(choice.message.content, null);
      const call = choice.message.tool_calls[0];
      assert.match(call.id, /^call_/);
      assert.deepEqual(call.function, { name: "lookup", arguments: '{"city":"Paris"}' });
      assert.equal(json.usage.completion_tokens, TOKENS.text);
    });

    await t.step("tool (stream): id and name first, then argument fragments", async () => {
      const body = { model: "gpt-tool", messages: [user("x")], stream: true };
      const chunks = payloads((await postSse(mock, path, body)).recs);
      const calls = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
      assert.equal(calls[0].function.name, "get_weather");
      assert.equal(calls[0].function.arguments, "");
      assert.ok(calls.length >= 3);
      assert.equal(calls.map((c) => c.function.arguments).join(""), '{"city":"Paris"}');
      assert.equal(chunks.at(-1).choices[0].finish_reason, "tool_calls");
    });

    await t.step("tool result: Tool said", async () => {
      const messages = [
        user("weather?"),
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function" }] },
        { role: "tool", tool_call_id: "call_1", content: "22C and sunny" },
      ];
      const { json } = await postJson(mock, path, { model: "gpt-tool", messages, tools });
      assert.equal(json.choices[0].message.content, "Tool said: 22C and sunny");
      assert.equal(json.choices[0].finish_reason, "stop");
    });

    await t.step("think: reasoning_content deltas and reasoning_tokens", async () => {
      const body = { model: "deepseek-think", messages: [user("q")], stream: true };
      const chunks = payloads((await postSse(mock, path, body)).recs);
      const reasoning = chunks.map((c) => c.choices[0].delta.reasoning_content ?? "").join("");
      assert.match(reasoning, /The user wrote "q"/);
      const { json } = await postJson(mock, path, {
        model: "deepseek-think",
        messages: [user("q")],
      });
      assert.equal(json.usage.completion_tokens_details.reasoning_tokens, TOKENS.reasoning);
      assert.equal(json.usage.completion_tokens, TOKENS.text + TOKENS.reasoning);
    });

    await t.step("cut: the connection drops before [DONE]", async () => {
      const body = { model: "gpt-cut", messages: [user("x")], stream: true };
      const { text, failed } = await postSse(mock, path, body);
      assert.ok(failed, "the connection drops");
      assert.ok(text.includes("Hello"), "some text arrives first");
      assert.ok(!text.includes("[DONE]"));
    });

    await t.step("cut (JSON): part of the body, then the connection drops", async () => {
      const { text, failed } = await readAll(
        await post(mock, path, { model: "gpt-cut", messages: [] }),
      );
      assert.ok(failed);
      assert.ok(text.startsWith('{"id":"chatcmpl-'));
    });

    await t.step("err429: OpenAI envelope and retry-after", async () => {
      const { res, json } = await postJson(mock, path, { model: "gpt-err429", messages: [] }, 429);
      assert.equal(json.error.code, "rate_limit_exceeded");
      assert.deepEqual(Object.keys(json.error).sort(), ["code", "message", "param", "type"]);
      assert.equal(res.headers.get("retry-after"), "1");
    });

    await t.step("requests are recorded", () => {
      const recorded = mock.requests[0];
      assert.equal(recorded.method, "POST");
      assert.equal(recorded.path, path);
      assert.equal(recorded.json.model, "gpt-text");
      assert.equal(recorded.headers["content-type"], "application/json");
      assert.equal(recorded.body, JSON.stringify(recorded.json));
    });
  });
});

Deno.test("mock upstream: OpenAI Responses over HTTP", async (t) => {
  await withMock(async (mock) => {
    const path = "/v1/responses";

    await t.step("stream: named events, sequence numbers, response.completed", async () => {
      const { recs } = await postSse(mock, path, { model: "o-text", input: "hey", stream: true });
      const events = payloads(recs);
      assert.ok(recs.every((r, i) => r.event === events[i].type));
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
      assert.deepEqual(events.slice(0, 4).map((e) => e.type), [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
      ]);
      const deltas = events.filter((e) => e.type === "response.output_text.delta");
      assert.ok(deltas.length >= 3);
      assert.equal(deltas.map((e) => e.delta).join(""), "Hello from responses mock: hey");
      const done = events.at(-1);
      assert.equal(done.type, "response.completed");
      assert.match(done.response.id, /^resp_/);
      assert.equal(done.response.output[0].content[0].text, "Hello from responses mock: hey");
      assert.equal(done.response.usage.input_tokens_details.cached_tokens, TOKENS.cacheRead);
    });

    await t.step("tool: function_call item with streamed arguments", async () => {
      const body = {
        model: "o-tool",
        input: "x",
        tools: [{ type: "function", name: "f1" }],
        stream: true,
      };
      const events = payloads((await postSse(mock, path, body)).recs);
      const args = events.filter((e) => e.type === "response.function_call_arguments.delta");
      assert.ok(args.length >= 2);
      const item = events.at(-1).response.output[0];
      assert.equal(item.type, "function_call");
      assert.equal(item.name, "f1");
      assert.match(item.id, /^fc_/);
      assert.match(item.call_id, /^call_/);
      assert.equal(args.map((e) => e.delta).join(""), item.arguments);
    });

    await t.step("think (JSON): reasoning item, then the message", async () => {
      const { json } = await postJson(mock, path, { model: "o-think", input: [user("why")] });
      const [reasoning, message] = json.output;
      assert.equal(reasoning.type, "reasoning");
      assert.match(reasoning.id, /^rs_/);
      assert.ok(reasoning.encrypted_content);
      assert.equal(reasoning.summary[0].type, "summary_text");
      assert.equal(message.content[0].text, "Hello from responses mock: why");
      assert.equal(json.usage.output_tokens_details.reasoning_tokens, TOKENS.reasoning);
    });

    await t.step("function_call_output input: Tool said", async () => {
      const input = [user("w"), { type: "function_call_output", call_id: "call_1", output: "42" }];
      const { json } = await postJson(mock, path, { model: "o-tool", input });
      assert.equal(json.output[0].content[0].text, "Tool said: 42");
    });

    await t.step("cut: no response.completed", async () => {
      const { recs, failed } = await postSse(mock, path, {
        model: "o-cut",
        input: "x",
        stream: true,
      });
      assert.ok(failed);
      assert.ok(payloads(recs).some((e) => e.type === "response.output_text.delta"));
      assert.ok(!recs.some((r) => r.event === "response.completed"));
    });

    await t.step("compact: user messages, then one compaction item", async () => {
      const input = [user("a"), { type: "message", role: "assistant", content: [] }, user("b")];
      const { json } = await postJson(mock, "/v1/responses/compact", { model: "o", input });
      assert.equal(json.object, "response.compaction");
      assert.deepEqual(json.output.map((i: Json) => i.type), ["message", "message", "compaction"]);
      assert.match(json.output[2].id, /^cmp_/);
      assert.ok(json.output[2].encrypted_content);
      assert.equal(json.usage.input_tokens, TOKENS.input);
    });

    await t.step("err500: OpenAI envelope", async () => {
      const { json } = await postJson(mock, path, { model: "o-err500", input: "x" }, 500);
      assert.equal(json.error.type, "server_error");
    });
  });
});

/** A client socket whose frames are read one at a time. */
async function openSocket(url: string) {
  const ws = new WebSocket(url.replace("http", "ws") + "/v1/responses");
  const frames: Json[] = [];
  const waiters: (() => void)[] = [];
  ws.onmessage = (e) => {
    frames.push(JSON.parse(e.data));
    waiters.shift()?.();
  };
  const closed = new Promise<CloseEvent>((resolve) => ws.onclose = resolve);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const next = async (): Promise<Json> => {
    if (!frames.length) await new Promise<void>((resolve) => waiters.push(resolve));
    return frames.shift();
  };
  /** Frames up to and including the first whose type is in `until`. */
  const until = async (...types: string[]): Promise<Json[]> => {
    const out = [await next()];
    while (!types.includes(out.at(-1).type)) out.push(await next());
    return out;
  };
  const send = (frame: unknown) => ws.send(JSON.stringify(frame));
  return { ws, send, next, until, closed };
}

Deno.test("mock upstream: Responses over WebSocket", async (t) => {
  await withMock(async (mock) => {
    const s = await openSocket(mock.url);
    let lastId = "";

    await t.step("response.create: the HTTP events, one JSON per frame", async () => {
      s.send({ type: "response.create", model: "o-text", input: [user("ping")] });
      const events = await s.until("response.completed", "error");
      assert.equal(events[0].type, "response.created");
      assert.equal(events.at(-1).type, "response.completed");
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
      const text = events.filter((e) => e.type === "response.output_text.delta").map((e) =>
        e.delta
      );
      assert.equal(text.join(""), "Hello from responses mock: ping");
      lastId = events.at(-1).response.id;
    });

    await t.step("previous_response_id chains from the last response only", async () => {
      s.send({ type: "response.create", model: "o-text", previous_response_id: lastId, input: [] });
      const ok = await s.until("response.completed", "error");
      assert.equal(ok.at(-1).type, "response.completed");
      s.send({ type: "response.create", model: "o-text", previous_response_id: lastId, input: [] });
      const err = await s.next();
      assert.equal(err.type, "error");
      assert.equal(err.status, 400);
      assert.equal(err.error.code, "previous_response_not_found");
      assert.equal(err.error.param, "previous_response_id");
    });

    await t.step("generate:false: created, then an empty completed", async () => {
      s.send({ type: "response.create", model: "o-text", generate: false, input: [] });
      const events = await s.until("response.completed", "error");
      assert.deepEqual(events.map((e) => e.type), ["response.created", "response.completed"]);
      assert.deepEqual(events[1].response.output, []);
    });

    await t.step("err429: wrapped error frame", async () => {
      s.send({ type: "response.create", model: "o-err429", input: [] });
      const err = await s.next();
      assert.equal(err.status, 429);
      assert.equal(err.error.code, "rate_limit_exceeded");
    });

    await t.step("recorded upgrade and frames", () => {
      const upgrade = mock.requests.find((r) => r.method === "GET");
      assert.equal(upgrade?.path, "/v1/responses");
      assert.equal(upgrade?.body, "");
      assert.equal(mock.wsFrames.length, 5);
      assert.equal(JSON.parse(mock.wsFrames[0]).type, "response.create");
    });

    s.ws.close();
    await s.closed;

    await t.step("cut: frames, then the server closes the socket", async () => {
      const c = await openSocket(mock.url);
      c.send({ type: "response.create", model: "o-cut", input: "x" });
      const close = await c.closed;
      assert.equal(close.code, 1011);
    });

    await t.step("close() closes sockets that are still open", async () => {
      const c = await openSocket(mock.url);
      c.send({ type: "response.create", model: "o-stall", input: "x" });
      assert.equal((await c.next()).type, "response.created");
      await mock.close();
      assert.equal((await c.closed).code, 1001);
    });
  });
});

Deno.test("mock upstream: Anthropic messages", async (t) => {
  await withMock(async (mock) => {
    const path = "/v1/messages";
    const base = { max_tokens: 64, messages: [user("hello")] };

    await t.step("stream: event lines, block events, message_stop", async () => {
      const { res, recs } = await postSse(mock, path, {
        ...base,
        model: "claude-text",
        stream: true,
      });
      assert.match(res.headers.get("request-id")!, /^req_/);
      const events = payloads(recs);
      assert.ok(recs.every((r, i) => r.event === events[i].type));
      assert.deepEqual(events.map((e) => e.type), [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
      ]);
      assert.match(events[0].message.id, /^msg_/);
      const text = events.filter((e) => e.delta?.type === "text_delta").map((e) => e.delta.text);
      assert.equal(text.join(""), "Hello from messages mock: hello");
      assert.equal(events.at(-2).delta.stop_reason, "end_turn");
      assert.equal(events.at(-2).usage.output_tokens, TOKENS.text);
    });

    await t.step("think: thinking block with signature_delta, usage split", async () => {
      const { recs } = await postSse(mock, path, { ...base, model: "claude-think", stream: true });
      const events = payloads(recs);
      assert.equal(events[2].content_block.type, "thinking");
      const deltas = events.filter((e) => e.index === 0 && e.type === "content_block_delta");
      assert.equal(deltas.at(-1).delta.type, "signature_delta");
      const { json } = await postJson(mock, path, { ...base, model: "claude-think" });
      assert.equal(json.content[0].type, "thinking");
      assert.equal(json.content[0].signature, deltas.at(-1).delta.signature);
      assert.equal(json.usage.cache_read_input_tokens, TOKENS.cacheRead);
      assert.equal(json.usage.cache_creation_input_tokens, TOKENS.cacheWrite);
      assert.equal(json.usage.input_tokens, TOKENS.input - TOKENS.cacheRead - TOKENS.cacheWrite);
    });

    await t.step("tool: tool_use with input_json_delta fragments, then a tool_result", async () => {
      const tools = [{ name: "search", input_schema: { type: "object" } }];
      const { recs } = await postSse(mock, path, {
        ...base,
        tools,
        model: "claude-tool",
        stream: true,
      });
      const events = payloads(recs);
      const start = events.find((e) => e.type === "content_block_start");
      assert.equal(start.content_block.name, "search");
      assert.match(start.content_block.id, /^toolu_/);
      const parts = events.filter((e) => e.delta?.type === "input_json_delta");
      assert.ok(parts.filter((e) => e.delta.partial_json).length >= 2);
      assert.equal(parts.map((e) => e.delta.partial_json).join(""), '{"city":"Paris"}');
      assert.equal(events.at(-2).delta.stop_reason, "tool_use");
      const messages = [
        user("w"),
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "search", input: {} }],
        },
        user([{
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: [{ type: "text", text: "ok" }],
        }]),
      ];
      const { json } = await postJson(mock, path, {
        ...base,
        messages,
        tools,
        model: "claude-tool",
      });
      assert.deepEqual(json.content, [{ type: "text", text: "Tool said: ok" }]);
    });

    await t.step("cut: no message_stop", async () => {
      const { recs, failed } = await postSse(mock, path, {
        ...base,
        model: "claude-cut",
        stream: true,
      });
      assert.ok(failed);
      assert.equal(recs[0].event, "message_start");
      assert.ok(!recs.some((r) => r.event === "message_stop"));
    });

    await t.step("count_tokens: deterministic input_tokens", async () => {
      const body = { model: "claude-text", messages: [user("count me")] };
      const a = await postJson(mock, path + "/count_tokens", body);
      const b = await postJson(mock, path + "/count_tokens", body);
      assert.ok(a.json.input_tokens > 0);
      assert.deepEqual(a.json, b.json);
    });

    await t.step("err529 and missing max_tokens: Anthropic envelopes", async () => {
      const { res, json } = await postJson(mock, path, { ...base, model: "claude-err529" }, 529);
      assert.equal(json.type, "error");
      assert.equal(json.error.type, "overloaded_error");
      assert.equal(json.request_id, res.headers.get("request-id"));
      const bad = await postJson(mock, path, { model: "claude-text", messages: [] }, 400);
      assert.equal(bad.json.error.type, "invalid_request_error");
    });
  });
});

Deno.test("mock upstream: Gemini", async (t) => {
  await withMock(async (mock) => {
    const contents = [{ role: "user", parts: [{ text: "bonjour" }] }];
    const stream = (model: string) => `/v1beta/models/${model}:streamGenerateContent`;

    await t.step("alt=sse: CRLF data records, no [DONE], finish on the last chunk", async () => {
      const { text, recs } = await postSse(
        mock,
        stream("gemini-text") + "?alt=sse",
        { contents },
        "\r\n\r\n",
      );
      assert.ok(!text.includes("[DONE]") && !text.includes("event:"));
      const chunks = payloads(recs);
      assert.ok(chunks.length >= 3);
      const parts = chunks.map((c) => c.candidates[0].content.parts[0].text);
      assert.equal(parts.join(""), "Hello from generate-content mock: bonjour");
      assert.ok(chunks.slice(0, -1).every((c) => !c.candidates[0].finishReason));
      const last = chunks.at(-1);
      assert.equal(last.candidates[0].finishReason, "STOP");
      assert.equal(last.usageMetadata.promptTokenCount, TOKENS.input);
      assert.equal(last.usageMetadata.candidatesTokenCount, TOKENS.text);
      assert.equal(mock.requests.at(-1)!.search, "?alt=sse");
    });

    await t.step("no alt: a streamed JSON array", async () => {
      const res = await post(mock, stream("gemini-text"), { contents });
      assert.match(res.headers.get("content-type")!, /^application\/json/);
      const text = await res.text();
      assert.ok(text.startsWith("[{") && text.includes("}\n,\r\n{") && text.endsWith("]"));
      const chunks = JSON.parse(text);
      assert.equal(chunks.at(-1).candidates[0].finishReason, "STOP");
    });

    await t.step("think: thought part, thoughtSignature, thoughtsTokenCount", async () => {
      const path = "/v1beta/models/gemini-think:generateContent";
      const { json } = await postJson(mock, path, { contents });
      const [thought, answer] = json.candidates[0].content.parts;
      assert.equal(thought.thought, true);
      assert.ok(answer.thoughtSignature);
      assert.equal(json.usageMetadata.thoughtsTokenCount, TOKENS.reasoning);
      assert.equal(
        json.usageMetadata.totalTokenCount,
        TOKENS.input + TOKENS.text + TOKENS.reasoning,
      );
      assert.ok(json.responseId);
    });

    await t.step("tool: whole functionCall, finishReason STOP; functionResponse", async () => {
      const path = "/v1beta/models/gemini-tool:generateContent";
      const tools = [{ functionDeclarations: [{ name: "find" }] }];
      const { json } = await postJson(mock, path, { contents, tools });
      assert.deepEqual(json.candidates[0].content.parts[0].functionCall, {
        name: "find",
        args: { city: "Paris" },
      });
      assert.equal(json.candidates[0].finishReason, "STOP");
      const reply = [
        ...contents,
        { role: "model", parts: [{ functionCall: { name: "find", args: {} } }] },
        {
          role: "user",
          parts: [{ functionResponse: { name: "find", response: { output: "done" } } }],
        },
      ];
      const second = await postJson(mock, path, { contents: reply, tools });
      assert.equal(second.json.candidates[0].content.parts[0].text, "Tool said: done");
    });

    await t.step("cut: the last chunk never arrives", async () => {
      const path = stream("gemini-cut") + "?alt=sse";
      const { recs, failed } = await postSse(mock, path, { contents }, "\r\n\r\n");
      assert.ok(failed);
      assert.ok(recs.length >= 1);
      assert.ok(payloads(recs).every((c) => !c.candidates[0].finishReason));
    });

    await t.step("err400 and err529: Google envelopes", async () => {
      const path = "/v1beta/models/gemini-err400:generateContent";
      const { json } = await postJson(mock, path, { contents }, 400);
      assert.deepEqual(json.error.code, 400);
      assert.equal(json.error.status, "INVALID_ARGUMENT");
      const overloaded = "/v1beta/models/gemini-err529:generateContent";
      const busy = await postJson(mock, overloaded, { contents }, 503);
      assert.equal(busy.json.error.status, "UNAVAILABLE");
    });
  });
});

Deno.test("mock upstream: robustness and bookkeeping", async (t) => {
  await withMock(async (mock) => {
    await t.step("malformed JSON: each vendor's 400", async () => {
      const chatErr = await postJson(mock, "/v1/chat/completions", "{oops", 400);
      assert.equal(chatErr.json.error.type, "invalid_request_error");
      const anthropicErr = await postJson(mock, "/v1/messages", "{oops", 400);
      assert.equal(anthropicErr.json.type, "error");
      const geminiErr = await postJson(mock, "/v1beta/models/g:generateContent", "{oops", 400);
      assert.equal(geminiErr.json.error.status, "INVALID_ARGUMENT");
    });

    await t.step("unknown path: 404", async () => {
      const { json } = await postJson(mock, "/v1/nothing", {}, 404);
      assert.match(json.error.message, /Invalid URL/);
    });

    await t.step("slow: a client that leaves is counted in aborted", async () => {
      const body = { model: "gpt-slow", messages: [user("x")], stream: true };
      const res = await post(mock, "/v1/chat/completions", body);
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
      await eventually(() => mock.aborted === 1);
    });

    await t.step("stall: first event, then silence until the client leaves", async () => {
      const body = { model: "claude-stall", max_tokens: 8, messages: [user("x")], stream: true };
      const res = await post(mock, "/v1/messages", body);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      const first = await reader.read();
      assert.match(first.value!, /^event: message_start/);
      await reader.cancel();
      await eventually(() => mock.aborted === 2);
    });

    await t.step("slow: SLOW_MS between events", async () => {
      const contents = [{ role: "user", parts: [{ text: "x" }] }];
      const started = performance.now();
      const path = "/v1beta/models/gemini-slow:streamGenerateContent?alt=sse";
      const { recs } = await postSse(mock, path, { contents }, "\r\n\r\n");
      assert.equal(recs.length, 3);
      assert.ok(performance.now() - started >= 2 * SLOW_MS - 20);
    });

    await t.step("a complete stream is not counted", async () => {
      const body = { model: "gpt-text", messages: [user("x")], stream: true };
      await postSse(mock, "/v1/chat/completions", body);
      assert.equal(mock.aborted, 2);
    });
  });

  await t.step("close() ends a stalled stream without counting it", async () => {
    const mock = await startMockUpstream();
    const res = await post(mock, "/v1/responses", { model: "o-stall", input: "x", stream: true });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    await reader.read();
    await mock.close();
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += r.value;
    assert.ok(!rest.includes("response.completed"));
    assert.equal(mock.aborted, 0);
  });
});
