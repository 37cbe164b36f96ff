/** Mappings the Anthropic Messages decoders and encoders share (both directions). */
import type * as ir from "../../src/ir.ts";
import { type ErrorKind, kindForStatus } from "../../src/errors.ts";
import { carrySignature } from "../../src/signature.ts";
import { ATTACHED, carryMarked, CUSTOM_INPUT_KEY, readMarked } from "../shared.ts";

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

export const finishFromStopReason = (reason: unknown): ir.FinishReason =>
  FINISH_BY_STOP_REASON[String(reason)] ?? "stop";

const STOP_REASON_BY_FINISH: Record<ir.FinishReason, string> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "refusal",
  pause: "pause_turn",
  // Anthropic has no "error" stop; the turn simply ended.
  error: "end_turn",
};

/** The client-facing `stop_reason`; tool calls always report `tool_use` (wire-formats §5.5). */
export function stopReasonFromIr(
  finish: ir.FinishReason,
  stopSequence: string | undefined,
  sawToolCall: boolean,
): string {
  if (sawToolCall && (finish === "stop" || finish === "error")) return "tool_use";
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
  return { status, kind: kindForStatus(status) };
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
