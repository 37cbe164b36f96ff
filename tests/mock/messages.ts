/** Anthropic Messages: `POST /v1/messages` (JSON or SSE) and `/v1/messages/count_tokens`. */
import { ids } from "./ids.ts";
import { pieces, type Reply, signature, textOf, type Usage } from "./scenario.ts";
import { arrayOf, type ErrorDetail, type ErrorReply, type Json, type Vendor } from "./vendor.ts";
import { typed, type WireEvent } from "./wire.ts";

const isText = (p: Json) => p.type === "text";

/** Anthropic's `input_tokens` excludes cache reads and writes. */
function messagesUsage(u: Usage) {
  return {
    input_tokens: u.input - u.cacheRead - u.cacheWrite,
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite, ephemeral_1h_input_tokens: 0 },
    output_tokens: u.output,
    output_tokens_details: { thinking_tokens: u.reasoning },
    service_tier: "standard",
  };
}

/** A content block: its final form, how it starts streaming, and its deltas. */
interface BlockPlan {
  block: Json;
  start: Json;
  deltas: Json[];
}

function blockPlans(reply: Reply): BlockPlan[] {
  const plans: BlockPlan[] = [];
  if (reply.reasoning) {
    const sig = signature("thinking", reply.model);
    plans.push({
      block: { type: "thinking", thinking: reply.reasoning, signature: sig },
      start: { type: "thinking", thinking: "", signature: "" },
      deltas: [
        ...pieces(reply.reasoning, 3).map((thinking) => ({ type: "thinking_delta", thinking })),
        { type: "signature_delta", signature: sig },
      ],
    });
  }
  if (reply.text !== undefined) {
    plans.push({
      block: { type: "text", text: reply.text },
      start: { type: "text", text: "" },
      deltas: pieces(reply.text, 3).map((text) => ({ type: "text_delta", text })),
    });
  }
  if (reply.toolCall) {
    const { name, arguments: args } = reply.toolCall;
    const id = ids.toolUse();
    plans.push({
      block: { type: "tool_use", id, name, input: JSON.parse(args) },
      start: { type: "tool_use", id, name, input: {} },
      // Anthropic opens every tool input with an empty fragment.
      deltas: ["", ...pieces(args, 2)].map((partial_json) => ({
        type: "input_json_delta",
        partial_json,
      })),
    });
  }
  return plans;
}

const stopReason = (reply: Reply) => reply.toolCall ? "tool_use" : "end_turn";

function message(reply: Reply, content: Json[], stop: string | null, usage: Json) {
  return {
    id: ids.anthropicMessage(),
    type: "message",
    role: "assistant",
    model: reply.model,
    content,
    stop_reason: stop,
    stop_sequence: null,
    ...(stop ? { stop_details: null } : {}),
    usage,
  };
}

function messagesEvents(reply: Reply): WireEvent[] {
  const usage = messagesUsage(reply.usage);
  const { output_tokens_details: _, ...startUsage } = { ...usage, output_tokens: 1 };
  const event = (type: string, fields: Json = {}, delta = false) =>
    typed({ type, ...fields }, delta);
  return [
    event("message_start", { message: message(reply, [], null, startUsage) }),
    event("ping"),
    ...blockPlans(reply).flatMap((b, index) => [
      event("content_block_start", { index, content_block: b.start }),
      ...b.deltas.map((delta) => event("content_block_delta", { index, delta }, true)),
      event("content_block_stop", { index }),
    ]),
    event("message_delta", {
      delta: { stop_reason: stopReason(reply), stop_sequence: null },
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
        output_tokens_details: usage.output_tokens_details,
      },
    }),
    event("message_stop"),
  ];
}

const ERRORS: Record<number, [type: string, message: string]> = {
  400: ["invalid_request_error", "prompt is too long: 215011 tokens > 200000 maximum"],
  404: ["not_found_error", "model: mock-missing"],
  429: [
    "rate_limit_error",
    "This request would exceed the rate limit for your organization (mock-org) of 50,000 input " +
    "tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You " +
    "can see the response headers for current usage. Please reduce the prompt length or the " +
    "maximum tokens requested, or try again later.",
  ],
  500: ["api_error", "Internal server error"],
  529: ["overloaded_error", "Overloaded"],
};

function messagesError(status: number, detail?: ErrorDetail): ErrorReply {
  const [type, message] = ERRORS[status] ?? ERRORS[500];
  const request_id = ids.anthropicRequest();
  const retry: Record<string, string> = status === 429 ? { "retry-after": "1" } : {};
  return {
    status,
    body: { type: "error", error: { type, message: detail?.message ?? message }, request_id },
    headers: { "request-id": request_id, ...retry },
  };
}

/** The text of a `tool_result` block's content (a string or content blocks). */
function toolResultText(block: Json): string {
  return textOf(block.content, isText);
}

export const messages: Vendor = {
  name: "messages",
  jsonContentType: "application/json",
  turn(body) {
    const turns = arrayOf(body.messages);
    const userText = textOf(turns.findLast((m) => m?.role === "user")?.content, isText);
    const last = turns.at(-1);
    const result = last?.role === "user"
      ? arrayOf(last.content).findLast((b) => b?.type === "tool_result")
      : undefined;
    return result ? { userText, toolResult: toolResultText(result) } : { userText };
  },
  firstTool: (body) => arrayOf(body.tools).map((t) => t?.name).find(Boolean),
  validate(body) {
    if (!Array.isArray(body.messages)) return "messages: Field required";
    if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  },
  json: (reply) =>
    message(
      reply,
      blockPlans(reply).map((b) => b.block),
      stopReason(reply),
      messagesUsage(reply.usage),
    ),
  events: messagesEvents,
  error: messagesError,
  streamError: (status, detail) => {
    const { error } = messagesError(status, detail).body as { error: Json };
    const event: Json = { type: "error", error };
    return typed(event);
  },
  headers: () => ({ "request-id": ids.anthropicRequest() }),
  badJson: "There was an error parsing the body: expected value at line 1 column 1",
  notFound: () => "Not Found",
};
