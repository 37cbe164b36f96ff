/**
 * An IR response as the `Interaction` resource an Interactions client gets: the model's steps,
 * `status` (`requires_action` when it ends in function calls), `usage` and times. The steps are
 * the answer's only: the request's input is the stored interaction's business. `output_text`
 * is left out as Google leaves it out: the SDK computes it from the steps.
 */
import type * as ir from "../../src/kit/ir.ts";
import type { ClientContext } from "../../src/kit/codec.ts";
import { carrySignature } from "../../src/kit/signature.ts";
import { encodeUsage, FAMILY, isoTime, modelSteps, type SignatureSlot, statusOf } from "./steps.ts";

/** Signatures of every family ride to the client (Gemini's untouched). */
export const carried: SignatureSlot = (sig) => sig && carrySignature(sig, FAMILY);

/** The resource's head, shared with the stream's lifecycle events. */
export function resourceHead(
  id: string,
  ctx: ClientContext,
  created: number,
  status: string,
): Record<string, unknown> {
  const updated = ctx.now?.() ?? Math.floor(Date.now() / 1000);
  return {
    id,
    model: ctx.model,
    status,
    created: isoTime(created),
    updated: isoTime(updated),
  };
}

/** The whole resource of an answer (a stream's too, gathered: collect.ts). */
export function interactionResource(res: ir.Response, ctx: ClientContext): Record<string, unknown> {
  return {
    ...resourceHead(ctx.id ?? res.id, ctx, res.created, statusOf(res.finish)),
    steps: res.parts.flatMap((p) => modelSteps(p, carried)),
    ...(res.usage && { usage: encodeUsage(res.usage) }),
  };
}

export function encodeResponse(res: ir.Response, ctx: ClientContext): Record<string, unknown> {
  const resource = interactionResource(res, ctx);
  ctx.onAnswer?.(resource);
  return resource;
}
