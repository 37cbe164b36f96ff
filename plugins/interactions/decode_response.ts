/** An Interactions provider's `Interaction` resource to an IR response (non-streaming). */
import type * as ir from "../../src/kit/ir.ts";
import type { DecodeContext } from "../../src/kit/codec.ts";
import { GatewayError } from "../../src/kit/errors.ts";
import { History } from "./history.ts";
import { continuationOf, decodeUsage, finishOf, unixTime } from "./steps.ts";

type Obj = Record<string, unknown>;

/** The step types an answer may hold that have an IR form; the rest (code runs, …) are not asked for. */
const ANSWER_STEPS = new Set([
  "model_output",
  "thought",
  "function_call",
  "google_search_call",
  "google_search_result",
  "url_context_call",
  "url_context_result",
]);

/**
 * The steps after the last input step (a resource may repeat its input before its answer), and
 * of the model's outputs their text: the gateway asks for no other modality.
 */
function answerSteps(steps: unknown): Obj[] {
  const all = (Array.isArray(steps) ? steps : []) as Obj[];
  const isInput = (s: Obj) => s.type === "user_input" || s.type === "function_result";
  return all.slice(all.findLastIndex(isInput) + 1).flatMap((s) => {
    if (!ANSWER_STEPS.has(String(s.type))) return [];
    if (s.type !== "model_output" || !Array.isArray(s.content)) return [s];
    return [{ ...s, content: (s.content as Obj[]).filter((c) => c.type === "text") }];
  });
}

export function decodeResponse(body: Obj, ctx: DecodeContext): ir.Response {
  if (body.status === "failed") throw failure(body);
  const history = new History();
  answerSteps(body.steps).forEach((s, i) => history.step(s as never, `steps[${i}]`));
  const parts = history.end().flatMap((m) => m.parts);
  const res: ir.Response = {
    id: typeof body.id === "string" ? body.id : ctx.id,
    model: typeof body.model === "string" ? body.model : "",
    created: unixTime(body.created, ctx.now),
    parts,
    finish: finishOf(body.status, parts.some((p) => p.type === "tool_call")),
    ...continuationOf(body),
  };
  const usage = decodeUsage(body.usage);
  if (usage) res.usage = usage;
  return res;
}

/** A failed interaction: its first recorded error, as an upstream failure. */
function failure(body: Obj): GatewayError {
  const errors = Array.isArray(body.errors) ? body.errors as Obj[] : [];
  const message = typeof errors[0]?.message === "string"
    ? errors[0].message
    : "the interaction failed upstream";
  return new GatewayError(502, "upstream", message);
}
