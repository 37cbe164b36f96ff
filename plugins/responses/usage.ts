/** Responses `usage` ↔ IR usage (wire-formats §5.6: both count cache and reasoning inside). */
import type * as ir from "../../src/kit/ir.ts";
import { num, obj } from "./read.ts";

interface WireUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export function toWireUsage(u: ir.Usage | undefined): WireUsage {
  const input = u?.inputTokens ?? 0;
  const output = u?.outputTokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: {
      cached_tokens: u?.cacheReadTokens ?? 0,
      cache_write_tokens: u?.cacheWriteTokens ?? 0,
    },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: u?.reasoningTokens ?? 0 },
    total_tokens: input + output,
  };
}

/** An upstream `usage` object; details it lacks stay absent. */
export function fromWireUsage(raw: unknown): ir.Usage | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const u = obj(raw);
  const usage: ir.Usage = {
    inputTokens: num(u.input_tokens) ?? 0,
    outputTokens: num(u.output_tokens) ?? 0,
  };
  const cacheRead = num(obj(u.input_tokens_details).cached_tokens);
  const cacheWrite = num(obj(u.input_tokens_details).cache_write_tokens);
  const reasoning = num(obj(u.output_tokens_details).reasoning_tokens);
  if (cacheRead) usage.cacheReadTokens = cacheRead;
  if (cacheWrite) usage.cacheWriteTokens = cacheWrite;
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}
