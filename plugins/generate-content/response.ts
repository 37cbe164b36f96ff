/** Whole (non-streaming) responses in both directions, and the client-side part shapes. */
import type * as ir from "../../src/kit/ir.ts";
import type { ClientContext, DecodeContext } from "../../src/kit/codec.ts";
import { carrySignature } from "../../src/kit/signature.ts";
import { ChunkDecoder } from "./chunks.ts";
import { argumentsObject } from "../shared.ts";
import { foldEvent } from "../../src/kit/ir.ts";
import { FAMILY, redactedSignature } from "./parts.ts";

import { GroundingBuilder } from "./grounding.ts";

type Obj = Record<string, unknown>;

// ---- upstream ----

export function decodeResponse(body: Obj, ctx: DecodeContext): ir.Response {
  const events = new ChunkDecoder(ctx).decode(body);
  const res: ir.Response = { id: ctx.id, model: "", created: ctx.now, parts: [], finish: "stop" };
  for (const e of events) foldEvent(res, e);
  return res;
}

// ---- ingress ----

/** IR parts as Gemini parts; signatures of other families ride in `thoughtSignature`. */
export function clientPart(p: ir.Part): Obj | undefined {
  const signed = (part: Obj, sig: ir.Signature | undefined): Obj =>
    sig ? { ...part, thoughtSignature: carrySignature(sig, FAMILY) } : part;
  switch (p.type) {
    case "text":
    case "thinking":
      // Gemini CLI rejects a chunk holding an empty text part that carries nothing.
      if (!p.text && !p.signature) return undefined;
      return signed({ text: p.text, ...(p.type === "thinking" && { thought: true }) }, p.signature);
    case "redacted_thinking":
      return { text: "", thought: true, thoughtSignature: redactedSignature(p) };
    case "tool_call":
      return signed(functionCallPart(p), p.signature);
    default:
      return undefined; // responses hold no inputs
  }
}

/** Ids always go out: clients echo them on their function responses, which pairs them. */
const functionCallPart = (p: Pick<ir.ToolCallPart, "id" | "name" | "arguments" | "kind">) => ({
  functionCall: { id: p.id, name: p.name, args: argumentsObject(p) },
});

const FINISH: Record<ir.FinishReason, string> = {
  stop: "STOP",
  tool_calls: "STOP", // Gemini ends function calls with STOP
  length: "MAX_TOKENS",
  content_filter: "SAFETY",
  pause: "STOP",
  error: "OTHER",
};

/** §5.6: candidates exclude thoughts; the prompt count includes cached content. */
function encodeUsage(u: ir.Usage): Obj {
  const reasoning = u.reasoningTokens ?? 0;
  return {
    promptTokenCount: u.inputTokens,
    candidatesTokenCount: u.outputTokens - reasoning,
    totalTokenCount: u.inputTokens + u.outputTokens,
    ...(u.cacheReadTokens && { cachedContentTokenCount: u.cacheReadTokens }),
    ...(reasoning && { thoughtsTokenCount: reasoning }),
  };
}

/** The response shape shared by whole responses and stream chunks. */
export function clientChunk(
  ctx: ClientContext,
  responseId: string,
  parts: Obj[],
  end?: { reason: ir.FinishReason; usage?: ir.Usage; grounding?: GroundingBuilder },
): Obj {
  return {
    candidates: [{
      content: { role: "model", parts },
      ...(end && { finishReason: FINISH[end.reason] }),
      index: 0,
      ...end?.grounding?.metadata(),
    }],
    ...(end?.usage && { usageMetadata: encodeUsage(end.usage) }),
    modelVersion: ctx.model,
    responseId,
  };
}

export function encodeResponse(res: ir.Response, ctx: ClientContext): Obj {
  const grounding = new GroundingBuilder();
  const parts = res.parts.flatMap((p, i) => {
    if (p.type === "text") grounding.part(i, p);
    if (p.type === "hosted_call") grounding.call(p);
    const part = clientPart(p);
    return part ? [part] : [];
  });
  return clientChunk(ctx, res.id, parts, { reason: res.finish, usage: res.usage, grounding });
}
