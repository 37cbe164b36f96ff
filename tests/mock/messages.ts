/** Anthropic Messages: `POST /v1/messages` (JSON or SSE) and `/v1/messages/count_tokens`. */
import { ids } from "./ids.ts";
import {
  pieces,
  type Reply,
  SEARCH_CITED,
  SEARCH_RESULTS,
  signature,
  textOf,
  type Usage,
} from "./scenario.ts";
import {
  arrayOf,
  type ErrorDetail,
  type ErrorReply,
  type Json,
  searchTools,
  type Vendor,
} from "./vendor.ts";
import { typed, type WireEvent } from "./wire.ts";

const isText = (p: Json) => p.type === "text";

/** Anthropic's `input_tokens` excludes cache reads and writes. */
function messagesUsage(u: Usage, searches = 0) {
  return {
    input_tokens: u.input - u.cacheRead - u.cacheWrite,
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite, ephemeral_1h_input_tokens: 0 },
    output_tokens: u.output,
    output_tokens_details: { thinking_tokens: u.reasoning },
    ...(searches && { server_tool_use: { web_search_requests: searches, web_fetch_requests: 0 } }),
    service_tier: "standard",
  };
}

/** A content block: its final form, how it starts streaming, and its deltas. */
interface BlockPlan {
  block: Json;
  start: Json;
  deltas: Json[];
}

/**
 * A web search as Anthropic runs it: `server_tool_use` (input streamed as JSON), the whole
 * `web_search_tool_result`, then the answer split into text blocks, the cited one carrying a
 * `web_search_result_location` (streamed as `citations_delta` before its text).
 */
function searchPlans(reply: Reply, query: string): BlockPlan[] {
  const id = `srvtoolu_01${ids.toolUse().slice("toolu_01".length)}`;
  const input = JSON.stringify({ query });
  const results = SEARCH_RESULTS.map((r, i) => ({
    type: "web_search_result",
    title: r.title,
    url: r.url,
    encrypted_content: btoa(`mock-page-${i}:${r.url}`),
    page_age: r.pageAge ?? null,
  }));
  const result = { type: "web_search_tool_result", tool_use_id: id, content: results };
  const text = reply.text ?? "";
  const [before, after] = text.split(SEARCH_CITED);
  const citation = {
    type: "web_search_result_location",
    cited_text: `${SEARCH_CITED} — Deno 3 is available today.`,
    url: SEARCH_RESULTS[0].url,
    title: SEARCH_RESULTS[0].title,
    encrypted_index: btoa(`mock-index:${SEARCH_RESULTS[0].url}`),
  };
  const plain = (t: string): BlockPlan => ({
    block: { type: "text", text: t, citations: null },
    start: { type: "text", text: "" },
    deltas: [{ type: "text_delta", text: t }],
  });
  return [
    {
      block: { type: "server_tool_use", id, name: "web_search", input: { query } },
      start: { type: "server_tool_use", id, name: "web_search", input: {} },
      deltas: ["", ...pieces(input, 2)].map((partial_json) => ({
        type: "input_json_delta",
        partial_json,
      })),
    },
    { block: result, start: result, deltas: [] },
    plain(before),
    {
      block: { type: "text", text: SEARCH_CITED, citations: [citation] },
      start: { type: "text", text: "", citations: [] },
      deltas: [
        { type: "citations_delta", citation },
        { type: "text_delta", text: SEARCH_CITED },
      ],
    },
    plain(after),
  ];
}

function blockPlans(reply: Reply): BlockPlan[] {
  if (reply.search) return searchPlans(reply, reply.search.query);
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
      deltas: pieces(reply.text, reply.textPieces).map((text) => ({ type: "text_delta", text })),
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

const stopReason = (reply: Reply) => reply.finish ?? (reply.toolCall ? "tool_use" : "end_turn");

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
  const usage = messagesUsage(reply.usage, reply.search ? 1 : 0);
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
        ...(usage.server_tool_use && { server_tool_use: usage.server_tool_use }),
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
  toolNames: (body) => arrayOf(body.tools).map((t) => t?.name).filter(Boolean),
  hostedSearch: (body) =>
    searchTools(arrayOf(body.tools), (t) => /^web_search_\d+$/.test(String(t?.type))),
  validate(body) {
    if (!Array.isArray(body.messages)) return "messages: Field required";
    if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  },
  json: (reply) =>
    message(
      reply,
      blockPlans(reply).map((b) => b.block),
      stopReason(reply),
      messagesUsage(reply.usage, reply.search ? 1 : 0),
    ),
  events: messagesEvents,
  error: messagesError,
  streamError: (status, detail) => {
    const { error } = messagesError(status, detail).body as { error: Json };
    const event: Json = { type: "error", error };
    return typed(event);
  },
  // The provider account's limits, as Anthropic reports them on every answer.
  headers: () => ({
    "request-id": ids.anthropicRequest(),
    "anthropic-ratelimit-requests-limit": "4000",
    "anthropic-ratelimit-requests-remaining": "3999",
    "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:00Z",
    "anthropic-ratelimit-input-tokens-limit": "2000000",
  }),
  badJson: "There was an error parsing the body: expected value at line 1 column 1",
  notFound: () => "Not Found",
};
