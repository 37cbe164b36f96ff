/** The published `openai` SDK against every provider API: chat completions and Responses. */
import assert from "node:assert/strict";
import {
  assertErrorStatus,
  type Harness,
  KEY,
  model,
  PASSTHROUGH,
  PROVIDERS,
  REASONING,
  rejection,
  replyText,
  startHarness,
  step,
  THINK_USAGE,
  TOOL_ARGS,
  TOOL_DESCRIPTION,
  TOOL_NAME,
  TOOL_REPLY,
  TOOL_RESULT,
  TOOL_SCENARIOS,
  TOOL_SCHEMA,
  upstreamMark,
  USAGE,
  USER,
} from "./common.ts";
import { OpenAI } from "./deps.ts";

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ChatCompletion = OpenAI.Chat.Completions.ChatCompletion;
type ChatUsage = OpenAI.Completions.CompletionUsage;
type Response = OpenAI.Responses.Response;
type ResponseUsage = OpenAI.Responses.ResponseUsage;

const client = (h: Harness) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });

// ---------------------------------------------------------------------------------------------
// Chat completions

const CHAT_TOOLS: OpenAI.Chat.Completions.ChatCompletionTool[] = [{
  type: "function",
  function: { name: TOOL_NAME, description: TOOL_DESCRIPTION, parameters: TOOL_SCHEMA },
}];

function assertChatUsage(u: ChatUsage | undefined | null, want = USAGE) {
  assert.ok(u, "usage missing");
  assert.equal(u.prompt_tokens, want.input, "usage.prompt_tokens");
  assert.equal(u.completion_tokens, want.output, "usage.completion_tokens");
  assert.equal(u.total_tokens, want.input + want.output, "usage.total_tokens");
  assert.equal(u.prompt_tokens_details?.cached_tokens, want.cacheRead, "cached_tokens");
  if (want.reasoning) {
    assert.equal(u.completion_tokens_details?.reasoning_tokens, want.reasoning, "reasoning_tokens");
  }
}

interface ChatResult {
  message: ChatCompletion["choices"][0]["message"] & { reasoning_content?: string };
  finish: string | null;
  usage?: ChatUsage | null;
}

/** `create()` without a stream, with `stream: true` (chunks folded by hand), or the helper. */
async function chatCall(
  oa: OpenAI,
  how: "json" | "create-stream" | "helper",
  params:
    & { model: string; messages: ChatMessage[]; tools?: typeof CHAT_TOOLS }
    & Record<
      string,
      unknown
    >,
): Promise<ChatResult> {
  if (how === "json") {
    const r = await oa.chat.completions.create({ ...params, stream: false });
    assert.equal(r.object, "chat.completion");
    const c = r.choices[0];
    return { message: c.message, finish: c.finish_reason, usage: r.usage };
  }
  if (how === "helper") {
    const s = oa.chat.completions.stream({
      ...params,
      stream_options: { include_usage: true },
    });
    let usage: ChatUsage | undefined;
    s.on("chunk", (chunk) => {
      if (chunk.usage) usage = chunk.usage;
    });
    const r = await s.finalChatCompletion();
    const c = r.choices[0];
    return { message: c.message, finish: c.finish_reason, usage };
  }
  const stream = await oa.chat.completions.create({
    ...params,
    stream: true,
    stream_options: { include_usage: true },
  });
  let content = "";
  let reasoning = "";
  let finish: string | null = null;
  let usage: ChatUsage | undefined;
  const calls: { id: string; type: "function"; function: { name: string; arguments: string } }[] =
    [];
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const d = c.delta as typeof c.delta & { reasoning_content?: string };
      content += d.content ?? "";
      reasoning += d.reasoning_content ?? "";
      for (const tc of d.tool_calls ?? []) {
        if (!calls[tc.index]) {
          assert.ok(tc.id && tc.function?.name, `first tool_call fragment lacks id/name`);
          calls[tc.index] = {
            id: tc.id,
            type: "function",
            function: { name: tc.function.name, arguments: "" },
          };
        }
        calls[tc.index].function.arguments += tc.function?.arguments ?? "";
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return {
    message: {
      role: "assistant",
      content: content || null,
      refusal: null,
      ...(calls.length ? { tool_calls: calls } : {}),
      ...(reasoning ? { reasoning_content: reasoning } : {}),
    },
    finish,
    usage,
  };
}

const CHAT_WAYS = ["json", "create-stream", "helper"] as const;

Deno.test("sdk openai chat.completions: every provider API", async (t) => {
  const h = await startHarness();
  const oa = client(h);
  try {
    for (const p of PROVIDERS) {
      for (const how of CHAT_WAYS) {
        await step(t, h, `${p.label} ${how}: text`, async () => {
          const m = upstreamMark(h);
          const r = await chatCall(oa, how, {
            model: model(p, "text"),
            messages: [{ role: "user", content: USER }],
          });
          assert.equal(r.message.content, replyText(p));
          assert.equal(r.finish, "stop");
          assertChatUsage(r.usage);
          m.landed(p, model(p, "text"));
        });
      }
      for (const how of ["json", "helper"] as const) {
        for (const scenario of TOOL_SCENARIOS) {
          await step(t, h, `${p.label} ${how}: ${scenario} round trip`, async () => {
            const m = upstreamMark(h);
            const name = model(p, scenario);
            const messages: ChatMessage[] = [{ role: "user", content: USER }];
            const params = {
              model: name,
              tools: CHAT_TOOLS,
              ...(scenario === "think-tool" ? { reasoning_effort: "low" } : {}),
            };
            const first = await chatCall(oa, how, { ...params, messages });
            assert.equal(first.finish, "tool_calls");
            const call = first.message.tool_calls?.[0];
            assert.ok(call && call.type === "function", "expected a function tool call");
            assert.equal(call.function.name, TOOL_NAME);
            assert.deepEqual(JSON.parse(call.function.arguments), TOOL_ARGS);
            assert.ok(call.id, "tool call id");
            messages.push(
              { role: "assistant", content: first.message.content, tool_calls: [call] },
              { role: "tool", tool_call_id: call.id, content: TOOL_RESULT },
            );
            const second = await chatCall(oa, how, { ...params, messages });
            assert.equal(second.message.content, TOOL_REPLY);
            assert.equal(second.finish, "stop");
            m.landed(p, name, 2);
          });
        }
      }
      for (const how of ["json", "create-stream"] as const) {
        await step(t, h, `${p.label} ${how}: thinking as reasoning_content`, async () => {
          const m = upstreamMark(h);
          const r = await chatCall(oa, how, {
            model: model(p, "think"),
            messages: [{ role: "user", content: USER }],
            reasoning_effort: "low",
          });
          assert.equal(r.message.reasoning_content, REASONING);
          assert.equal(r.message.content, replyText(p));
          assertChatUsage(r.usage, THINK_USAGE);
          m.landed(p, model(p, "think"));
        });
      }
      for (const how of CHAT_WAYS) {
        await step(t, h, `${p.label} ${how}: provider 429 is RateLimitError`, async () => {
          const e = await rejection(() =>
            chatCall(oa, how, {
              model: model(p, "err429"),
              messages: [{ role: "user", content: USER }],
            })
          );
          assertErrorStatus(e, OpenAI.RateLimitError, 429);
        });
      }
      for (const how of ["create-stream", "helper"] as const) {
        await step(t, h, `${p.label} ${how}: upstream cut mid-stream is an APIError`, async () => {
          const e = await rejection(() =>
            chatCall(oa, how, {
              model: model(p, "cut"),
              messages: [{ role: "user", content: USER }],
            })
          );
          assert.ok(e instanceof OpenAI.APIError, `expected an APIError, got ${e}`);
        });
      }
    }
  } finally {
    await h.close();
  }
});

// ---------------------------------------------------------------------------------------------
// Responses

const RESPONSE_TOOLS: OpenAI.Responses.Tool[] = [{
  type: "function",
  name: TOOL_NAME,
  description: TOOL_DESCRIPTION,
  parameters: TOOL_SCHEMA,
  strict: false,
}];

function assertResponseUsage(u: ResponseUsage | undefined | null, want = USAGE) {
  assert.ok(u, "usage missing");
  assert.equal(u.input_tokens, want.input, "usage.input_tokens");
  assert.equal(u.output_tokens, want.output, "usage.output_tokens");
  assert.equal(u.total_tokens, want.input + want.output, "usage.total_tokens");
  assert.equal(u.input_tokens_details?.cached_tokens, want.cacheRead, "cached_tokens");
  if (want.reasoning) {
    assert.equal(u.output_tokens_details?.reasoning_tokens, want.reasoning, "reasoning_tokens");
  }
}

type ResponseParams = Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, "stream">;

interface ResponsesResult {
  response: Response;
  /** Text from the `response.output_text.delta` events (streams only). */
  deltas?: string;
  reasoningDeltas?: string;
}

/** `create()` without a stream, with `stream: true` (events checked by hand), or the helper. */
async function responsesCall(
  oa: OpenAI,
  how: "json" | "create-stream" | "helper",
  params: ResponseParams,
): Promise<ResponsesResult> {
  if (how === "json") {
    const response = await oa.responses.create({ ...params, stream: false });
    return { response };
  }
  if (how === "helper") {
    const s = oa.responses.stream(params);
    let deltas = "";
    let reasoningDeltas = "";
    for await (const ev of s) {
      if (ev.type === "response.output_text.delta") deltas += ev.delta;
      if (ev.type === "response.reasoning_summary_text.delta") reasoningDeltas += ev.delta;
    }
    return { response: await s.finalResponse(), deltas, reasoningDeltas };
  }
  const stream = await oa.responses.create({ ...params, stream: true });
  const types: string[] = [];
  let deltas = "";
  let reasoningDeltas = "";
  let completed: Response | undefined;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === "response.output_text.delta") deltas += ev.delta;
    if (ev.type === "response.reasoning_summary_text.delta") reasoningDeltas += ev.delta;
    if (ev.type === "response.completed") completed = ev.response;
  }
  assert.equal(types[0], "response.created", `first event: ${types.join(",")}`);
  assert.equal(types.at(-1), "response.completed", `last event: ${types.join(",")}`);
  assert.ok(completed);
  return { response: completed, deltas, reasoningDeltas };
}

/** Concatenated output_text of the message items (the SDK's `output_text`, for raw events). */
function outputText(r: Response): string {
  return r.output.flatMap((i) => i.type === "message" ? i.content : [])
    .map((c) => c.type === "output_text" ? c.text : "").join("");
}

const RESPONSES_WAYS = ["json", "create-stream", "helper"] as const;

Deno.test("sdk openai responses: every provider API and passthrough", async (t) => {
  const h = await startHarness();
  const oa = client(h);
  try {
    for (const p of [...PROVIDERS, PASSTHROUGH]) {
      for (const how of RESPONSES_WAYS) {
        await step(t, h, `${p.label} ${how}: text`, async () => {
          const m = upstreamMark(h);
          const { response: r, deltas } = await responsesCall(oa, how, {
            model: model(p, "text"),
            input: USER,
          });
          assert.equal(r.status, "completed");
          assert.equal(outputText(r), replyText(p));
          if (how !== "create-stream") assert.equal(r.output_text, replyText(p));
          if (deltas !== undefined) assert.equal(deltas, replyText(p), "streamed deltas");
          assertResponseUsage(r.usage);
          m.landed(p, model(p, "text"));
        });
      }
      for (const how of ["json", "helper"] as const) {
        for (const scenario of TOOL_SCENARIOS) {
          await step(t, h, `${p.label} ${how}: ${scenario} round trip`, async () => {
            const m = upstreamMark(h);
            const name = model(p, scenario);
            const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: USER }];
            const params = {
              model: name,
              tools: RESPONSE_TOOLS,
              ...(scenario === "think-tool"
                ? {
                  reasoning: { effort: "low", summary: "auto" } as const,
                  include: ["reasoning.encrypted_content" as const],
                  store: false,
                }
                : {}),
            };
            const first = await responsesCall(oa, how, { ...params, input });
            const call = first.response.output.find((i) => i.type === "function_call");
            assert.ok(call, `expected a function_call item, got ${JSON.stringify(first.response)}`);
            assert.equal(call.name, TOOL_NAME);
            assert.deepEqual(JSON.parse(call.arguments), TOOL_ARGS);
            assert.ok(call.call_id, "call_id");
            input.push(
              ...first.response.output as OpenAI.Responses.ResponseInputItem[],
              { type: "function_call_output", call_id: call.call_id, output: TOOL_RESULT },
            );
            const second = await responsesCall(oa, how, { ...params, input });
            assert.equal(outputText(second.response), TOOL_REPLY);
            m.landed(p, name, 2);
          });
        }
      }
      for (const how of ["json", "helper"] as const) {
        await step(t, h, `${p.label} ${how}: thinking as a reasoning summary`, async () => {
          const m = upstreamMark(h);
          const r = await responsesCall(oa, how, {
            model: model(p, "think"),
            input: USER,
            reasoning: { effort: "low", summary: "auto" },
          });
          const reasoning = r.response.output.find((i) => i.type === "reasoning");
          assert.ok(reasoning, `expected a reasoning item, got ${JSON.stringify(r.response)}`);
          assert.equal(reasoning.summary.map((s) => s.text).join(""), REASONING);
          if (r.reasoningDeltas !== undefined) assert.equal(r.reasoningDeltas, REASONING);
          assert.equal(outputText(r.response), replyText(p));
          assertResponseUsage(r.response.usage, THINK_USAGE);
          m.landed(p, model(p, "think"));
        });
      }
      for (const how of RESPONSES_WAYS) {
        await step(t, h, `${p.label} ${how}: provider 429 is RateLimitError`, async () => {
          const e = await rejection(() =>
            responsesCall(oa, how, { model: model(p, "err429"), input: USER })
          );
          assertErrorStatus(e, OpenAI.RateLimitError, 429);
        });
      }
      for (const how of ["create-stream", "helper"] as const) {
        await step(t, h, `${p.label} ${how}: upstream cut mid-stream is an APIError`, async () => {
          const e = await rejection(() =>
            responsesCall(oa, how, { model: model(p, "cut"), input: USER })
          );
          assert.ok(e instanceof OpenAI.APIError, `expected an APIError, got ${e}`);
        });
      }
    }
  } finally {
    await h.close();
  }
});
