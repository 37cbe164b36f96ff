/** Client-facing Responses shapes, shared by the JSON answer and the stream. */
import type { ClientContext } from "../../src/kit/codec.ts";
import type * as ir from "../../src/kit/ir.ts";
import { citedSpan } from "../hosted.ts";
import { compactionContent } from "./compaction.ts";
import { toWireUsage } from "./usage.ts";

type ItemStatus = "in_progress" | "completed";

/** What every `response` object repeats. */
export interface ResponseMeta {
  id: string;
  createdAt: number;
  model: string;
  /** The request's settings (echo.ts); absent when unknown (decoding tests). */
  settings?: Record<string, unknown>;
  /** Unix seconds now (for `completed_at`). */
  now?: () => number;
}

/** The response id a client sees: the gateway's own when set, else from the upstream's. */
export const metaOf = (ctx: ClientContext, irId: string, createdAt: number): ResponseMeta => ({
  id: ctx.id ?? responseId(irId),
  createdAt,
  model: ctx.model,
  settings: ctx.echo,
  now: ctx.now,
});

const responseId = (irId: string) => (irId.startsWith("resp_") ? irId : `resp_${irId}`);

/** Item ids derive from the response id and the item's output index, so they are stable. */
export const itemId = (prefix: string, respId: string, outputIndex: number) =>
  `${prefix}_${respId.slice("resp_".length)}_${outputIndex}`;

export const outputText = (text: string, annotations: unknown[] = []) => ({
  type: "output_text",
  annotations,
  logprobs: [],
  text,
});

/** An IR citation as a `url_citation` annotation of `text` (character offsets). */
export function urlCitation(c: ir.Citation, text: string) {
  const { start, end } = citedSpan(c, text);
  return {
    type: "url_citation",
    start_index: start,
    end_index: end,
    url: c.url,
    title: c.title ?? c.url,
  };
}

/** A hosted search or fetch as the `web_search_call` item Codex keeps in its history. */
export function webSearchCallItem(id: string, part: ir.HostedCallPart, done: boolean) {
  const action = part.kind === "web_fetch"
    ? { type: "open_page", url: part.url ?? part.results?.[0]?.url ?? null }
    : {
      type: "search",
      query: part.queries?.[0] ?? "",
      ...(part.queries && part.queries.length > 1 && { queries: part.queries }),
      sources: (part.results ?? []).map((r) => ({ type: "url", url: r.url })),
    };
  return {
    id,
    type: "web_search_call",
    status: !done ? "in_progress" : part.error ? "failed" : "completed",
    action,
  };
}

export const messageItem = (id: string, status: ItemStatus, content: unknown[]) => ({
  id,
  type: "message",
  status,
  content,
  role: "assistant",
});

export const reasoningItem = (id: string, text: string, encrypted?: string) => ({
  id,
  type: "reasoning",
  summary: text ? [{ type: "summary_text", text }] : [],
  ...(encrypted && { encrypted_content: encrypted }),
});

export const compactionItem = (id: string, summary: string) => ({
  id,
  type: "compaction",
  encrypted_content: compactionContent(summary),
});

interface CallInfo {
  /** The IR tool-call id: the client's `call_id`. */
  id: string;
  name: string;
  kind?: "function" | "custom";
}

export const callPrefix = (call: CallInfo) => (call.kind === "custom" ? "ctc" : "fc");

/** A tool call as Codex dispatches it: custom tools take free text, functions JSON. */
export function toolCallItem(
  id: string,
  call: CallInfo,
  payload: string,
  status: ItemStatus,
  namespace: string | undefined,
) {
  const ns = namespace === undefined ? {} : { namespace };
  return call.kind === "custom"
    ? {
      id,
      type: "custom_tool_call",
      status,
      call_id: call.id,
      input: payload,
      name: call.name,
      ...ns,
    }
    : {
      id,
      type: "function_call",
      status,
      arguments: payload,
      call_id: call.id,
      name: call.name,
      ...ns,
    };
}

/** Tool name → the namespace its calls must name (Codex dispatches by both). */
export function toolNamespaces(ctx: ClientContext): Map<string, string> {
  return new Map(ctx.tools?.flatMap((t) => (t.namespace ? [[t.name, t.namespace]] : [])));
}

/** How a finish reason ends a response. */
export function terminalOf(finish: ir.FinishReason) {
  switch (finish) {
    case "length":
      return incomplete("max_output_tokens");
    case "content_filter":
      return incomplete("content_filter");
    case "error":
      return {
        event: "response.failed",
        status: "failed",
        incomplete_details: null,
        error: {
          code: "server_error",
          message: "the upstream model ended the response with an error",
        },
      } as const;
    default:
      return {
        event: "response.completed",
        status: "completed",
        incomplete_details: null,
        error: null,
      } as const;
  }
}

const incomplete = (reason: string) => ({
  event: "response.incomplete",
  status: "incomplete",
  incomplete_details: { reason },
  error: null,
} as const);

type Terminal = ReturnType<typeof terminalOf>;

/** Settings echoed when the request's are unknown: OpenAI's defaults. */
const DEFAULT_SETTINGS = {
  previous_response_id: null,
  instructions: null,
  tools: [],
  tool_choice: "auto",
  truncation: "disabled",
  parallel_tool_calls: true,
  text: { format: { type: "text" }, verbosity: "medium" },
  temperature: 1,
  top_p: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
  top_logprobs: 0,
  reasoning: { effort: null, summary: null },
  max_output_tokens: null,
  max_tool_calls: null,
  store: false,
  background: false,
  service_tier: "default",
  metadata: {},
  safety_identifier: null,
  prompt_cache_key: null,
};

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * The `response` object with every field Open Responses' `ResponseResource` requires; `end`
 * is absent while it is in progress (`completed_at` is set once it completed).
 */
export function responseObject(
  meta: ResponseMeta,
  output: unknown[],
  end?: Terminal,
  usage?: ir.Usage,
): Record<string, unknown> {
  return {
    id: meta.id,
    object: "response",
    created_at: meta.createdAt,
    completed_at: end?.status === "completed"
      ? Math.max(meta.createdAt, (meta.now ?? nowSeconds)())
      : null,
    status: end?.status ?? "in_progress",
    error: end?.error ?? null,
    incomplete_details: end?.incomplete_details ?? null,
    model: meta.model,
    output,
    usage: end ? toWireUsage(usage) : null,
    ...DEFAULT_SETTINGS,
    ...meta.settings,
  };
}
