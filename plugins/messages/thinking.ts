/**
 * Claude's extended thinking settings, as Anthropic's `thinking` object: the Messages body
 * sends it at the top level, Bedrock Converse inside `additionalModelRequestFields`. Claude's
 * rules hold on both: budgets below max_tokens, no sampling hints beside thinking, and a tool
 * loop replays the signed thinking that Claude issued through the same API (`family`).
 */
import type * as ir from "../../src/kit/ir.ts";
import type { EncodeContext } from "../../src/kit/codec.ts";
import { signatureFor } from "../../src/kit/signature.ts";
import type { Obj } from "./common.ts";

/** Effort levels as thinking budgets, for `thinking: {type: "enabled"}`. */
const BUDGET_BY_EFFORT: Record<Exclude<ir.Effort, "none">, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
  max: 65536,
};
const MIN_BUDGET = 1024;

interface Thinking {
  config: Obj;
  /** `max_tokens` when thinking changes it. */
  maxTokens?: number;
  /** Effort for `output_config.effort` (adaptive thinking). */
  effort?: string;
  /** Explicitly off (`{type: "disabled"}`). */
  disabled?: boolean;
}

/**
 * With thinking on, Anthropic requires the last assistant turn of a tool loop to start with
 * its signed thinking block. History written by another model or format (or by a client that
 * strips thoughts, like Gemini CLI) lacks it, so that request must go without thinking.
 */
function toolTurnLacksThinking(messages: ir.Message[], family: ir.Family): boolean {
  const last = messages.findLast((m) => m.role === "assistant");
  if (!last?.parts.some((p) => p.type === "tool_call")) return false;
  return !last.parts.some((p) =>
    (p.type === "thinking" && signatureFor(p.signature, family) !== undefined) ||
    (p.type === "redacted_thinking" && p.family === family)
  );
}

/**
 * IR reasoning → `thinking`. Thinking is left off (and reported as dropped) where Anthropic
 * would refuse it: with a forced tool choice, a max_tokens too small for the minimum budget,
 * or a tool loop whose last assistant turn carries no Anthropic thinking block.
 */
export function encodeThinking(
  req: ir.Request,
  ctx: EncodeContext,
  forcedHosted: boolean,
  /** Whose signed thinking this API replays (`anthropic` for Messages). */
  family: ir.Family,
): Thinking | undefined {
  const r = req.reasoning;
  if (!r) return undefined;
  if (r.disabled || r.effort === "none" || r.budgetTokens === 0) {
    return { config: { type: "disabled" }, disabled: true };
  }
  const thinking = forcedHosted ? undefined : enabledThinking(req, r, ctx, family);
  if (!thinking) ctx.dropped?.push("thinking");
  return thinking;
}

function enabledThinking(
  req: ir.Request,
  r: ir.Reasoning,
  ctx: EncodeContext,
  family: ir.Family,
): Thinking | undefined {
  const forced = req.toolChoice?.type === "required" || req.toolChoice?.type === "tool";
  if (forced || toolTurnLacksThinking(req.messages, family)) return undefined;
  const display = r.includeThoughts === false ? { display: "omitted" } : {};
  if (r.adaptive || (r.budgetTokens ?? 0) < 0) {
    const effort = r.effort === "minimal" ? "low" : r.effort;
    return { config: { type: "adaptive", ...display }, effort };
  }
  const effort = r.effort === "none" ? undefined : r.effort; // "none" was handled by the caller
  const budget = budgetTokens(r.budgetTokens, effort, req.maxTokens);
  if (budget === undefined) return undefined;
  const config = { type: "enabled", budget_tokens: budget, ...display };
  // Without a client limit the default allowance is for the answer; the budget comes on top.
  if (req.maxTokens === undefined) return { config, maxTokens: ctx.defaultMaxTokens + budget };
  return { config };
}

/**
 * The thinking budget: the explicit one, or the effort level's. It counts toward max_tokens
 * and must stay below it; an effort-derived budget takes at most half, leaving the answer
 * room. Anthropic's minimum is 1024, so a client limit too small for that means no thinking.
 */
function budgetTokens(
  explicit: number | undefined,
  effort: keyof typeof BUDGET_BY_EFFORT | undefined,
  maxTokens: number | undefined,
): number | undefined {
  const wanted = explicit ?? BUDGET_BY_EFFORT[effort ?? "medium"];
  if (maxTokens === undefined) return Math.max(MIN_BUDGET, wanted);
  const cap = explicit === undefined ? Math.floor(maxTokens / 2) : maxTokens - 1;
  const budget = Math.max(MIN_BUDGET, Math.min(wanted, cap));
  return budget < maxTokens ? budget : undefined;
}

/**
 * Anthropic rejects `temperature` and `top_k` with thinking on, and `top_p` below 0.95; those
 * are left off then (clients such as Gemini CLI send them along with thinking by default).
 */
export function encodeSampling(req: ir.Request, thinking: boolean, dropped?: string[]): Obj {
  const out: Obj = {};
  const keep = (name: string, value: number | undefined, allowed: boolean) => {
    if (value === undefined) return;
    if (allowed) out[name] = value;
    else dropped?.push(name);
  };
  keep("temperature", req.temperature, !thinking);
  keep("top_k", req.topK, !thinking);
  keep("top_p", req.topP, !thinking || (req.topP ?? 1) >= 0.95);
  return out;
}
