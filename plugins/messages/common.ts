/** Mappings the Anthropic Messages decoders and encoders share (both directions). */
import type * as ir from "../../src/kit/ir.ts";
import type { UsageSource } from "../../src/kit/usage.ts";
import { badRequest, type ErrorKind, kindForStatus } from "../../src/kit/errors.ts";
import { carrySignature } from "../../src/kit/signature.ts";
import {
  ANTHROPIC_STATUSES,
  ATTACHED,
  carryMarked,
  CUSTOM_INPUT_KEY,
  finishByName,
  readMarked,
} from "../shared.ts";

export const FAMILY: ir.Family = "anthropic";

export type Obj = Record<string, unknown>;
/** A wire object tagged by `type` (content blocks, events). */
export type Tagged = { type: string } & Obj;

/** Anthropic `usage` (non-streaming body, `message_start`, cumulative `message_delta`). */
export interface WireUsage {
  input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  output_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number } | null;
}

/** Anthropic `input_tokens` excludes cache reads and writes; the IR total includes them. */
export function usageToIr(u: WireUsage): ir.Usage {
  const read = u.cache_read_input_tokens ?? undefined;
  const write = u.cache_creation_input_tokens ?? undefined;
  const usage: ir.Usage = {
    inputTokens: (u.input_tokens ?? 0) + (read ?? 0) + (write ?? 0),
    outputTokens: u.output_tokens ?? 0,
  };
  if (read !== undefined) usage.cacheReadTokens = read;
  if (write !== undefined) usage.cacheWriteTokens = write;
  const thinking = u.output_tokens_details?.thinking_tokens;
  if (thinking !== undefined) usage.reasoningTokens = thinking;
  return usage;
}

/**
 * The usage of an answer (`usage`) or of a stream's events, merged in order: `message_start`'s
 * `message.usage`, then `message_delta`'s cumulative `usage` (later values replace earlier
 * ones; absent and null ones keep theirs).
 */
export function readUsage({ json }: UsageSource): ir.Usage | undefined {
  let usage: Obj | undefined;
  for (const j of json) {
    const part = j.usage ?? (j.message as Obj | undefined)?.usage;
    if (!part || typeof part !== "object") continue;
    usage ??= {};
    for (const [key, value] of Object.entries(part)) if (value != null) usage[key] = value;
  }
  return usage && usageToIr(usage as WireUsage);
}

export function usageFromIr(u: ir.Usage): WireUsage {
  const read = u.cacheReadTokens ?? 0;
  const write = u.cacheWriteTokens ?? 0;
  const wire: WireUsage = {
    input_tokens: Math.max(0, u.inputTokens - read - write),
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
    output_tokens: u.outputTokens,
  };
  if (u.reasoningTokens !== undefined) {
    wire.output_tokens_details = { thinking_tokens: u.reasoningTokens };
  }
  return wire;
}

const FINISH_BY_STOP_REASON: Record<string, ir.FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  refusal: "content_filter",
  pause_turn: "pause",
};

/** Anthropic's stop reason; one it may add later is an error, never `end_turn` (shared.ts). */
export const finishFromStopReason = (reason: unknown): ir.FinishReason =>
  finishByName(FINISH_BY_STOP_REASON, reason);

const STOP_REASON_BY_FINISH: Record<ir.FinishReason, string> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "refusal",
  pause: "pause_turn",
  // Anthropic has no "error" stop: an answer ending in error ends with the stream's error event
  // or an error status (shared.ts `errorFinish`), one ending in tool calls with `tool_use`.
  error: "tool_use",
};

/** The client-facing `stop_reason`; tool calls always report `tool_use` (wire-formats §5.5). */
export function stopReasonFromIr(
  finish: ir.FinishReason,
  stopSequence: string | undefined,
  sawToolCall: boolean,
): string {
  if (sawToolCall && finish === "stop") return "tool_use";
  if (finish === "stop" && stopSequence !== undefined) return "stop_sequence";
  return STOP_REASON_BY_FINISH[finish];
}

/** Client-facing message ids keep the `msg_` style. */
export const messageId = (irId: string): string => irId.startsWith("msg_") ? irId : `msg_${irId}`;

/** Anthropic tool ids must match `[a-zA-Z0-9_-]+`; other formats' ids are kept when they do. */
export const toolUseId = (irId: string): string => irId.replace(/[^a-zA-Z0-9_-]/g, "_") || "toolu_";

const STATUS_BY_ERROR_TYPE: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** An Anthropic in-stream `error.type` as an HTTP status and a vendor-neutral kind. */
export function errorFromType(type: unknown): { status: number; kind: ErrorKind } {
  const status = STATUS_BY_ERROR_TYPE[String(type)] ?? 500;
  return { status, kind: kindForStatus(status, ANTHROPIC_STATUSES) };
}

/**
 * A part's stop; a custom tool call's collected `{"input": text}` JSON goes first, unwrapped to
 * the text (formats whose tool input is an object stream custom calls that way).
 */
export function stopPart(
  part: { index: number; customJson?: string },
  emit: (e: ir.StreamEvent) => void,
) {
  if (part.customJson !== undefined) {
    emit({ type: "arguments_delta", index: part.index, json: unwrapCustomInput(part.customJson) });
  }
  emit({ type: "part_stop", index: part.index });
}

/** The raw text of a custom tool's `{"input": text}`; the JSON itself if it is not that shape. */
export function unwrapCustomInput(json: string): string {
  try {
    const input = JSON.parse(json)?.[CUSTOM_INPUT_KEY];
    if (typeof input === "string") return input;
  } catch {
    // incomplete or not JSON: keep it as it came
  }
  return json;
}

/** Redacted thinking of another family keeps its family behind the signature prefix. */
export const redactedThinkingBlock = (data: string, family: ir.Family): Tagged => ({
  type: "redacted_thinking",
  data: carrySignature({ family, value: data }, FAMILY),
});

/**
 * Anthropic has no signature slot on text or tool_use blocks, so a foreign signature on such a
 * part (a Gemini thought signature) rides in an empty `thinking` block right after the part,
 * marked `attached:` (see `Marker`).
 */
export function attachedSignatureBlocks(sig: ir.Signature | undefined): Tagged[] {
  // Anthropic itself never signs text or tool calls.
  if (!sig || sig.family === FAMILY) return [];
  return [{ type: "thinking", thinking: "", signature: carryMarked(ATTACHED, sig, FAMILY) }];
}

/** The part signature a replayed carrier block holds, when the signature is one. */
export function readAttached(sig: ir.Signature): ir.Signature | undefined {
  return sig.family === FAMILY ? undefined : readMarked(ATTACHED, sig);
}

// ---- server tools (hosted web search and fetch) ----

/** Anthropic's server tool name for each IR hosted kind, and back. */
const SERVER_TOOL_NAMES: Record<ir.HostedKind, string> = {
  web_search: "web_search",
  web_fetch: "web_fetch",
};

const KIND_BY_NAME: Record<string, ir.HostedKind> = {
  web_search: "web_search",
  web_fetch: "web_fetch",
};

/** A `server_tool_use` block as a hosted run still waiting for its result (web search/fetch). */
export function serverRun(id: string, name: string, input: Obj): ir.HostedCallPart | undefined {
  const kind = KIND_BY_NAME[name];
  if (!kind) return undefined;
  const part: ir.HostedCallPart = { type: "hosted_call", id, kind };
  if (kind === "web_search") part.queries = typeof input.query === "string" ? [input.query] : [];
  else if (typeof input.url === "string") part.url = input.url;
  return part;
}

/** Fills a hosted run from its `web_search_tool_result` / `web_fetch_tool_result` block. */
export function applyServerResult(run: ir.HostedCallPart, block: Obj) {
  const content = block.content;
  if (Array.isArray(content)) {
    run.results = (content as Obj[]).flatMap((r) =>
      typeof r?.url === "string"
        ? [{
          url: r.url,
          ...(typeof r.title === "string" && { title: r.title }),
          ...(typeof r.page_age === "string" && { pageAge: r.page_age }),
        }]
        : []
    );
    return;
  }
  const c = (content ?? {}) as Obj;
  if (typeof c.error_code === "string") {
    run.error = c.error_code;
    return;
  }
  if (typeof c.url === "string") {
    const doc = (c.content ?? {}) as Obj;
    run.url ??= c.url;
    run.results = [{ url: c.url, ...(typeof doc.title === "string" && { title: doc.title }) }];
  }
}

/** Whether a block type is a server tool's result (not the client's own `tool_result`). */
export const isServerResult = (type: unknown) =>
  typeof type === "string" && type !== "tool_result" && type.endsWith("_tool_result");

/** A `web_search_result_location` citation as an IR citation (the whole text block cites it). */
export function citationOf(c: Obj): ir.Citation | undefined {
  if (c?.type !== "web_search_result_location" || typeof c.url !== "string") return undefined;
  const out: ir.Citation = { url: c.url };
  if (typeof c.title === "string") out.title = c.title;
  if (typeof c.cited_text === "string") out.citedText = c.cited_text;
  return out;
}

/** Server tool ids look like `srvtoolu_…`; others' ids are kept behind that prefix. */
const serverToolId = (irId: string) =>
  irId.startsWith("srvtoolu_") ? irId : `srvtoolu_${irId.replace(/[^a-zA-Z0-9_-]/g, "_")}`;

/** A hosted run as the client blocks Claude Code reads: `server_tool_use` and its result. */
export function serverToolBlocks(p: ir.HostedCallPart): { use: Tagged; result: Tagged } {
  const id = serverToolId(p.id);
  const name = SERVER_TOOL_NAMES[p.kind];
  const input = p.kind === "web_search" ? { query: p.queries?.[0] ?? "" } : { url: p.url ?? "" };
  const use = { type: "server_tool_use", id, name, input };
  if (p.kind === "web_fetch") {
    const url = p.url ?? p.results?.[0]?.url ?? "";
    const content = p.error ? { type: "web_fetch_tool_result_error", error_code: "unavailable" } : {
      type: "web_fetch_result",
      url,
      content: {
        type: "document",
        source: { type: "text", media_type: "text/plain", data: "" },
        title: p.results?.[0]?.title ?? null,
      },
      retrieved_at: null,
    };
    return { use, result: { type: "web_fetch_tool_result", tool_use_id: id, content } };
  }
  const content = p.error
    ? { type: "web_search_tool_result_error", error_code: "unavailable" }
    : (p.results ?? []).map((r) => ({
      type: "web_search_result",
      url: r.url,
      title: r.title ?? r.url,
      encrypted_content: "",
      page_age: r.pageAge ?? null,
    }));
  return { use, result: { type: "web_search_tool_result", tool_use_id: id, content } };
}

/**
 * An IR citation as Anthropic's: it has no offsets (a text block cites as a whole), so the
 * cited passage is the part's span; `encrypted_index` is Anthropic's own and left empty.
 */
export function citationBlock(c: ir.Citation, text: string): Obj {
  const start = c.start ?? 0;
  const end = c.end ?? text.length;
  return {
    type: "web_search_result_location",
    url: c.url,
    title: c.title ?? null,
    cited_text: c.citedText ?? text.slice(start, end).slice(0, 150),
    encrypted_index: "",
  };
}

/** `usage.server_tool_use`: how many searches and fetches ran. */
export function serverToolUsage(runs: readonly ir.HostedCallPart[]): Obj | undefined {
  if (runs.length === 0) return undefined;
  const count = (k: ir.HostedKind) => runs.filter((r) => r.kind === k).length;
  return { web_search_requests: count("web_search"), web_fetch_requests: count("web_fetch") };
}

/** Anthropic's `cache_control`, as clients send it (`type` is `ephemeral`, its one kind). */
type CacheControl = { type: string; ttl?: string } | null | undefined;

/** A wire object's `cache_control` as the IR's cache breakpoint on `target`. */
export function readCache(
  target: { cache?: ir.CacheBreakpoint },
  wire: { cache_control?: CacheControl },
): void {
  const control = wire.cache_control;
  if (!control) return;
  if (control.type !== "ephemeral") {
    throw badRequest(
      `cache_control.type: "${control.type}" cannot be converted (expected "ephemeral")`,
      "cache_control.type",
    );
  }
  target.cache = control.ttl === undefined ? {} : { ttl: control.ttl };
}

/** An IR cache breakpoint as Anthropic's `cache_control`. */
export const cacheControl = (cache: ir.CacheBreakpoint): Obj => ({
  type: "ephemeral",
  ...(cache.ttl !== undefined && { ttl: cache.ttl }),
});
