/** What Bedrock Converse's request, response and stream mappings share. */
import type * as ir from "../../src/kit/ir.ts";
import { finishByName } from "../shared.ts";

/**
 * Converse's reasoning signatures are their own family: AWS documents them as passed back to
 * Converse with the reasoning text, not as interchangeable with Anthropic's API (docs/providers.md).
 */
export const FAMILY: ir.Family = "converse";

export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Claude behind Converse (a model id, inference profile or ARN naming Anthropic's model). */
export const isClaude = (model: string) => /anthropic|claude/i.test(model);

/** Converse `usage` (the JSON body and the stream's `metadata` event). */
export interface WireUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** Converse's `inputTokens` excludes cache reads and writes; the IR total includes them. */
export function usageToIr(u: WireUsage): ir.Usage {
  const usage: ir.Usage = {
    inputTokens: (u.inputTokens ?? 0) + (u.cacheReadInputTokens ?? 0) +
      (u.cacheWriteInputTokens ?? 0),
    outputTokens: u.outputTokens ?? 0,
  };
  if (u.cacheReadInputTokens !== undefined) usage.cacheReadTokens = u.cacheReadInputTokens;
  if (u.cacheWriteInputTokens !== undefined) usage.cacheWriteTokens = u.cacheWriteInputTokens;
  return usage;
}

const FINISH_BY_STOP_REASON: Record<string, ir.FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  content_filtered: "content_filter",
  guardrail_intervened: "content_filter",
  malformed_model_output: "error",
  malformed_tool_use: "error",
};

/** Bedrock's stop reason; one it may add later is an error, never `end_turn` (shared.ts). */
export const finishFromStopReason = (reason: unknown): ir.FinishReason =>
  finishByName(FINISH_BY_STOP_REASON, reason);
