/** OpenAI Chat Completions: `POST /v1/chat/completions`. */
import { ids, nowSeconds } from "./ids.ts";
import {
  OPENAI_BAD_JSON,
  openaiError,
  openaiErrorObject,
  openaiHeaders,
  openaiNotFound,
} from "./openai.ts";
import { pieces, type Reply, textOf, type Usage } from "./scenario.ts";
import { arrayOf, type Json, type Vendor } from "./vendor.ts";
import { untyped, type WireEvent } from "./wire.ts";

const isText = (p: Json) => p.type === "text";

function chatUsage(u: Usage) {
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: {
      cached_tokens: u.cacheRead,
      cache_write_tokens: u.cacheWrite,
      audio_tokens: 0,
    },
    completion_tokens_details: {
      reasoning_tokens: u.reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

const finishReason = (reply: Reply) => reply.finish ?? (reply.toolCall ? "tool_calls" : "stop");

function chatJson(reply: Reply) {
  const message: Json = {
    role: "assistant",
    content: reply.text ?? null,
    refusal: null,
    annotations: [],
  };
  if (reply.reasoning) message.reasoning_content = reply.reasoning;
  if (reply.toolCall) {
    const { name, arguments: args } = reply.toolCall;
    message.tool_calls = [{
      id: ids.call(),
      type: "function",
      function: { name, arguments: args },
    }];
  }
  return {
    id: ids.chatCompletion(),
    object: "chat.completion",
    created: nowSeconds(),
    model: reply.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(reply) }],
    usage: chatUsage(reply.usage),
    service_tier: "default",
    system_fingerprint: "fp_mock",
  };
}

/** Content chunks (deltas), then the finish chunk, then the usage chunk when asked for. */
function chatEvents(reply: Reply, body: Json): WireEvent[] {
  const includeUsage = body.stream_options?.include_usage === true;
  const head = {
    id: ids.chatCompletion(),
    object: "chat.completion.chunk",
    created: nowSeconds(),
    model: reply.model,
    service_tier: "default",
    system_fingerprint: "fp_mock",
  };
  const chunk = (delta: Json, finish: string | null = null, isDelta = true) =>
    untyped({
      ...head,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    }, isDelta);
  const events = [chunk({ role: "assistant", content: "", refusal: null }, null, false)];
  for (const p of pieces(reply.reasoning ?? "", 3)) {
    events.push(chunk({ content: null, reasoning_content: p }));
  }
  for (const p of pieces(reply.text ?? "", reply.textPieces)) events.push(chunk({ content: p }));
  if (reply.toolCall) {
    const { name, arguments: args } = reply.toolCall;
    const start = { index: 0, id: ids.call(), type: "function", function: { name, arguments: "" } };
    events.push(chunk({ tool_calls: [start] }, null, false));
    for (const p of pieces(args, 2)) {
      events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] }));
    }
  }
  events.push(chunk({}, finishReason(reply), false));
  if (includeUsage) events.push(untyped({ ...head, choices: [], usage: chatUsage(reply.usage) }));
  return events;
}

export const chat: Vendor = {
  name: "chat",
  jsonContentType: "application/json",
  turn(body) {
    const messages = arrayOf(body.messages);
    const userText = textOf(messages.findLast((m) => m?.role === "user")?.content, isText);
    const last = messages.at(-1);
    if (last?.role !== "tool") return { userText };
    return { userText, toolResult: textOf(last.content, isText) };
  },
  hostedSearch: () => undefined,
  toolNames: (body) =>
    arrayOf(body.tools).map((t) => t?.function?.name ?? t?.custom?.name).filter(Boolean),
  validate: () => undefined,
  json: chatJson,
  events: chatEvents,
  streamError: (status, detail) =>
    untyped({ error: openaiErrorObject(status, "messages", detail) }),
  error: openaiError("messages"),
  headers: openaiHeaders,
  badJson: OPENAI_BAD_JSON,
  notFound: openaiNotFound,
};
