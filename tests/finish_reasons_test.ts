/**
 * Gemini's finish reasons on converted routes: only `STOP` reads as a finished answer. `OTHER`,
 * a broken tool protocol, a reason added later (and an interaction's `cancelled`) end every
 * client's answer with its format's error — never chat's `stop` or Messages' `end_turn` /
 * `stop_sequence` — and the refusals end as content filtered. The other providers' decoders
 * follow the same rule where their APIs name every reason (Anthropic, Bedrock, Responses'
 * statuses); chat, spoken by many servers with names of their own, reads only its documented
 * `error` as one. The mock ends with the reason the model name gives (`finishX`,
 * tests/mock/scenario.ts).
 */
import assert from "node:assert/strict";
import { Anthropic, GoogleGenAI, OpenAI } from "./sdk/deps.ts";
import { KEY, startHarness } from "./helpers.ts";
import { decodeStream } from "../plugins/generate-content/stream.ts";
import { decodeResponse } from "../plugins/generate-content/response.ts";
import { decodeStream as decodeInteractions } from "../plugins/interactions/decode_stream.ts";
import { messagesCodec } from "../plugins/messages/codec.ts";
import { chatCodec } from "../plugins/chat/codec.ts";
import { responsesCodec } from "../plugins/responses/codec.ts";
import type * as ir from "../src/kit/ir.ts";

const CTX = { now: 1, id: "r" };

/** A Gemini answer's last chunk, ending with `reason` (a token where one is given). */
const chunk = (reason?: string, token?: string, text = "x") => ({
  candidates: [{
    content: { role: "model", parts: [{ text }] },
    ...(reason && { finishReason: reason }),
    ...(token && { continuationToken: token }),
    index: 0,
  }],
});

function streamed(...chunks: Record<string, unknown>[]): ir.StreamEvent[] {
  const out: ir.StreamEvent[] = [];
  const step = decodeStream(CTX);
  for (const c of chunks) {
    step.transform({ data: JSON.stringify(c) }, { enqueue: (e) => out.push(e) });
  }
  return out;
}

const finishOf = (events: ir.StreamEvent[]) =>
  events.find((e): e is Extract<ir.StreamEvent, { type: "finish" }> => e.type === "finish");

Deno.test("Gemini finish reasons: only STOP is a stop; unknown ones are errors", () => {
  const table: [string, ir.FinishReason][] = [
    ["STOP", "stop"],
    ["MAX_TOKENS", "length"],
    ["CONTINUATION", "length"],
    ["SAFETY", "content_filter"],
    ["RECITATION", "content_filter"],
    ["LANGUAGE", "content_filter"],
    ["BLOCKLIST", "content_filter"],
    ["PROHIBITED_CONTENT", "content_filter"],
    ["SPII", "content_filter"],
    ["IMAGE_SAFETY", "content_filter"],
    ["IMAGE_PROHIBITED_CONTENT", "content_filter"],
    ["IMAGE_RECITATION", "content_filter"],
    ["OTHER", "error"],
    ["MALFORMED_FUNCTION_CALL", "error"],
    ["UNEXPECTED_TOOL_CALL", "error"],
    ["TOO_MANY_TOOL_CALLS", "error"],
    ["NO_IMAGE", "error"],
    ["IMAGE_OTHER", "error"],
    ["FINISH_REASON_UNSPECIFIED", "error"],
    ["A_REASON_ADDED_LATER", "error"],
  ];
  for (const [reason, want] of table) {
    assert.equal(finishOf(streamed(chunk(reason)))!.reason, want, reason);
    assert.equal(decodeResponse(chunk(reason), CTX).finish, want, reason);
  }
});

Deno.test("Gemini CONTINUATION: its token ends the hop; a checkpoint or MAX_TOKENS token does not", () => {
  // A token before the end is a mid-hop checkpoint: no finish yet.
  const events = streamed(chunk(undefined, "ct_checkpoint"), chunk("CONTINUATION", "ct_end"));
  assert.equal(events.filter((e) => e.type === "finish").length, 1);
  assert.deepEqual(finishOf(events), { type: "finish", reason: "length", continuation: "ct_end" });
  assert.equal(decodeResponse(chunk("CONTINUATION", "ct_end"), CTX).continuation, "ct_end");
  // MAX_TOKENS carries a token too, but the budget is spent: the answer ends.
  assert.deepEqual(finishOf(streamed(chunk("MAX_TOKENS", "ct_spent"))), {
    type: "finish",
    reason: "length",
  });
});

Deno.test("Interactions statuses: requires_continuation goes on, failed/cancelled/unknown are errors", () => {
  const completed = (status: string, token?: string) => {
    const out: ir.StreamEvent[] = [];
    const step = decodeInteractions(CTX);
    const interaction = { id: "i", status, ...(token && { continuation_token: token }) };
    for (
      const data of [{ event_type: "interaction.created", interaction }, {
        event_type: "interaction.status_update",
        status: "in_progress",
        continuation_token: "ct_checkpoint",
      }, { event_type: "interaction.completed", interaction }]
    ) {
      step.transform({ data: JSON.stringify(data) }, { enqueue: (e) => out.push(e) });
    }
    return finishOf(out)!;
  };
  assert.deepEqual(completed("requires_continuation", "ct_1"), {
    type: "finish",
    reason: "length",
    continuation: "ct_1",
  });
  for (
    const [status, want] of [
      ["completed", "stop"],
      ["requires_action", "tool_calls"],
      ["incomplete", "length"],
      ["budget_exceeded", "length"],
      ["failed", "error"],
      ["cancelled", "error"],
      ["in_progress", "error"],
      ["a_status_added_later", "error"],
    ] as const
  ) {
    assert.deepEqual(completed(status), { type: "finish", reason: want }, status);
  }
});

const MESSAGES = [{ role: "user" as const, content: "hi" }];

/** Chat: a 502, or the stream's error chunk (the SDK throws): never finish_reason "stop". */
async function chatHearsError(openai: OpenAI, model: string) {
  const messages = MESSAGES;
  const json = await openai.chat.completions.create({ model, messages }).catch((e) => e);
  assert.ok(json instanceof OpenAI.APIError && json.status === 502, `${model}: ${json}`);
  const finishes: string[] = [];
  const streamFailed = await (async () => {
    const stream = await openai.chat.completions.create({ model, messages, stream: true });
    for await (const c of stream) {
      finishes.push(...c.choices.flatMap((x) => x.finish_reason ?? []));
    }
  })().catch((e) => e);
  assert.ok(streamFailed instanceof OpenAI.APIError, `${model}: ${streamFailed}`);
  assert.deepEqual(finishes, [], model);
}

/** Messages: a 502, or the stream's error event: never end_turn or stop_sequence. */
async function messagesHearsError(anthropic: Anthropic, model: string) {
  const messages = MESSAGES;
  const message = await anthropic.messages.create({ model, max_tokens: 100, messages })
    .catch((e) => e);
  assert.ok(message instanceof Anthropic.APIError && message.status === 502, `${model}`);
  const stops: (string | null)[] = [];
  const events = anthropic.messages.stream({ model, max_tokens: 100, messages });
  events.on(
    "streamEvent",
    (e) => e.type === "message_delta" && stops.push(e.delta.stop_reason),
  );
  const streamError = await events.finalMessage().catch((e) => e);
  assert.ok(streamError instanceof Anthropic.APIError, `${model}: ${streamError}`);
  assert.deepEqual(stops, [], model);
}

/** Responses: failed. */
async function responsesFailed(openai: OpenAI, model: string) {
  const response = await openai.responses.create({ model, input: "hi" });
  assert.equal(response.status, "failed", model);
}

Deno.test("Gemini finish reasons through the gateway: no client reads an error as success", async () => {
  const h = await startHarness();
  try {
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
    const messages = MESSAGES;
    for (
      const model of ["gem-finishother", "gem-finisha_reason_added_later", "int-finishcancelled"]
    ) {
      await chatHearsError(openai, model);
      await messagesHearsError(anthropic, model);
      await responsesFailed(openai, model);
    }
    // A refusal reads as one.
    const refused = await anthropic.messages.create({
      model: "gem-finishsafety",
      max_tokens: 100,
      messages,
    });
    assert.equal(refused.stop_reason, "refusal");
    // An Interactions client on the Gemini route: failed; a Gemini client on its own route
    // gets Google's own reason, relayed.
    const ai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    const interaction = await ai.interactions.create({ model: "gem-finishother", input: "hi" });
    assert.equal(interaction.status, "failed");
    const relayed = await ai.models.generateContent({ model: "gem-finishother", contents: "hi" });
    assert.equal(relayed.candidates![0].finishReason, "OTHER");
  } finally {
    await h.close();
  }
});

Deno.test("other providers' stop reasons: a name their APIs do not document is an error, but chat's", () => {
  const messages = (reason: string) =>
    messagesCodec.decodeResponse(
      { content: [{ type: "text", text: "x" }], stop_reason: reason },
      CTX,
    ).finish;
  const messagesStream = (reason: string) => {
    const out: ir.StreamEvent[] = [];
    const step = messagesCodec.decodeStream(CTX);
    const emit = { enqueue: (e: ir.StreamEvent) => out.push(e) };
    for (
      const [event, data] of [
        ["message_start", { message: { id: "m", model: "c", usage: {} } }],
        ["message_delta", { delta: { stop_reason: reason }, usage: { output_tokens: 1 } }],
        ["message_stop", {}],
      ] as const
    ) step.transform({ event, data: JSON.stringify({ type: event, ...data }) }, emit);
    return finishOf(out)!.reason;
  };
  const anthropic: [string, ir.FinishReason][] = [
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["max_tokens", "length"],
    ["model_context_window_exceeded", "length"],
    ["tool_use", "tool_calls"],
    ["refusal", "content_filter"],
    ["pause_turn", "pause"],
    ["a_reason_added_later", "error"],
    // A name of an object's prototype is no name of the API's.
    ["constructor", "error"],
  ];
  for (const [reason, want] of anthropic) {
    assert.equal(messages(reason), want, reason);
    assert.equal(messagesStream(reason), want, reason);
  }
  const chat = (reason: string) =>
    chatCodec.decodeResponse({
      id: "c",
      choices: [{ index: 0, message: { role: "assistant", content: "x" }, finish_reason: reason }],
    }, CTX).finish;
  const chatTable: [string, ir.FinishReason][] = [
    ["stop", "stop"],
    ["length", "length"],
    ["content_filter", "content_filter"],
    // Chat-compatible servers' own: Mistral's, OpenRouter's and vLLM's error, vLLM's abort and
    // cut loop, DeepSeek's overload, Mistral's context cap.
    ["error", "error"],
    ["abort", "error"],
    ["repetition", "error"],
    ["insufficient_system_resource", "error"],
    ["model_length", "length"],
    // A server's own name for a finished answer (TGI's, Together's) stays a stop.
    ["eos_token", "stop"],
    ["eos", "stop"],
    ["constructor", "stop"],
  ];
  for (const [reason, want] of chatTable) assert.equal(chat(reason), want, reason);
  const responses = (status: string) =>
    responsesCodec.decodeResponse({ id: "r", status, output: [] }, CTX).finish;
  for (
    const [status, want] of [
      ["completed", "stop"],
      ["incomplete", "length"],
      ["cancelled", "error"],
      ["in_progress", "error"],
      ["a_status_added_later", "error"],
    ] as const
  ) assert.equal(responses(status), want, status);
});

Deno.test("other providers' stop reasons through the gateway: an error or an unknown reason never reads as success", async () => {
  const h = await startHarness();
  try {
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
    // Anthropic's API ending with a reason it adds later.
    await chatHearsError(openai, "msg-finisha_reason_added_later");
    await responsesFailed(openai, "msg-finisha_reason_added_later");
    // A chat provider's `error`.
    await messagesHearsError(anthropic, "chat-finisherror");
    await responsesFailed(openai, "chat-finisherror");
    // A Responses answer that was cancelled (the mock ends only a JSON answer so).
    const cancelled = await anthropic.messages.create({
      model: "resp-finishcancelled",
      max_tokens: 100,
      messages: MESSAGES,
    }).catch((e) => e);
    assert.ok(cancelled instanceof Anthropic.APIError && cancelled.status === 502, `${cancelled}`);
    // Chat's other names: a context cap is a length stop; a server's own name for a finished
    // answer stays a finished answer.
    const ask = (model: string) =>
      anthropic.messages.create({ model, max_tokens: 100, messages: MESSAGES });
    assert.equal((await ask("chat-finishmodel_length")).stop_reason, "max_tokens");
    assert.equal((await ask("chat-finisheos_token")).stop_reason, "end_turn");
  } finally {
    await h.close();
  }
});
