/**
 * Amazon Nova 2's extended thinking through Converse. AWS documents it as `reasoningConfig`
 * (`type` enabled or disabled, `maxReasoningEffort` low, medium or high) in
 * `additionalModelRequestFields`; it is off by default. Nova 1 models (`amazon.nova-pro-v1:0`)
 * have no such switch. Nova 2 Lite returns its reasoning redacted.
 */
import type * as ir from "../../src/kit/ir.ts";
import { effortForBudget } from "../shared.ts";
import type { Obj } from "./common.ts";

/** A Nova 2 model id, inference profile (`us.amazon.nova-2-lite-v1:0`) or ARN naming one. */
export const isNova2 = (model: string) => /amazon\.nova-2-/i.test(model);

/** The IR's efforts as Nova's three. */
const NOVA_EFFORT: Record<Exclude<ir.Effort, "none">, string> = {
  minimal: "low",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high",
  max: "high",
};

/**
 * The request's reasoning as Nova 2's `reasoningConfig`: an effort, or a budget as the nearest
 * effort, or adaptive thinking as medium; undefined when the request asks nothing of it (only
 * to see thoughts), leaving the model's default.
 */
export function novaReasoningConfig(r: ir.Reasoning | undefined): Obj | undefined {
  if (!r) return undefined;
  if (r.disabled || r.effort === "none" || r.budgetTokens === 0) return { type: "disabled" };
  const effort = r.effort ?? effortForBudget(r.budgetTokens) ?? (r.adaptive ? "medium" : undefined);
  if (effort === undefined || effort === "none") return undefined;
  return { type: "enabled", maxReasoningEffort: NOVA_EFFORT[effort] };
}
