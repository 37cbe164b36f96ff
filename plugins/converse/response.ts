/**
 * A Bedrock Converse JSON response, both ways: read from a provider into the IR, and written
 * from the IR for a Converse client.
 */
import type * as ir from "../../src/kit/ir.ts";
import type { ClientContext, DecodeContext } from "../../src/kit/codec.ts";
import { carrySignature } from "../../src/kit/signature.ts";
import { argumentsObject, ATTACHED, carryMarked, CUSTOM_INPUT_KEY, REDACTED } from "../shared.ts";
import { toolUseId } from "../messages/common.ts";
import {
  FAMILY,
  finishFromStopReason,
  isObj,
  type Obj,
  stopReasonFromIr,
  usageFromIr,
  usageToIr,
  type WireUsage,
} from "./common.ts";

export function decodeResponse(body: Obj, ctx: DecodeContext): ir.Response {
  const message = isObj(body.output) && isObj(body.output.message) ? body.output.message : {};
  const blocks = Array.isArray(message.content) ? message.content.filter(isObj) : [];
  const parts = blocks.flatMap((b) => partOf(b, ctx));
  const sawToolCall = parts.some((p) => p.type === "tool_call");
  // Converse has neither a response id nor the model's name in its answer.
  const res: ir.Response = {
    id: ctx.id,
    model: "",
    created: ctx.now,
    parts,
    finish: sawToolCall ? "tool_calls" : finishFromStopReason(body.stopReason),
  };
  const usage = usageOf(body);
  if (usage) res.usage = usage;
  return res;
}

/** The usage of a response body or a stream's `metadata` event. */
export const usageOf = (body: Obj): ir.Usage | undefined =>
  isObj(body.usage) ? usageToIr(body.usage as WireUsage) : undefined;

function partOf(block: Obj, ctx: DecodeContext): ir.Part[] {
  if (typeof block.text === "string") return [{ type: "text", text: block.text }];
  if (isObj(block.toolUse)) return [toolCall(block.toolUse, ctx)];
  if (isObj(block.reasoningContent)) return reasoning(block.reasoningContent);
  return []; // citations, guard content and other blocks the IR has no part for
}

function toolCall(use: Obj, ctx: DecodeContext): ir.ToolCallPart {
  const name = String(use.name ?? "");
  const input = use.input ?? {};
  const call: ir.ToolCallPart = {
    type: "tool_call",
    id: String(use.toolUseId ?? ""),
    name,
    arguments: JSON.stringify(input),
  };
  const text = isObj(input) ? input[CUSTOM_INPUT_KEY] : undefined;
  if (ctx.customTools?.includes(name) && typeof text === "string") {
    return { ...call, kind: "custom", arguments: text };
  }
  return call;
}

function reasoning(content: Obj): ir.Part[] {
  if (typeof content.redactedContent === "string") {
    return [{ type: "redacted_thinking", data: content.redactedContent, family: FAMILY }];
  }
  const r = isObj(content.reasoningText) ? content.reasoningText : {};
  const part: ir.ThinkingPart = { type: "thinking", text: String(r.text ?? "") };
  if (typeof r.signature === "string") part.signature = { family: FAMILY, value: r.signature };
  return [part];
}

// ---- ingress ----

export function encodeResponse(res: ir.Response, _ctx: ClientContext): Obj {
  const sawToolCall = res.parts.some((p) => p.type === "tool_call");
  return {
    output: { message: { role: "assistant", content: res.parts.flatMap(encodeBlocks) } },
    stopReason: stopReasonFromIr(res.finish, res.stopSequence, sawToolCall),
    usage: usageFromIr(res.usage ?? { inputTokens: 0, outputTokens: 0 }),
  };
}

/**
 * A signature of another family on a text or tool call (Gemini's), which Converse has no slot
 * for: it rides in an empty reasoning block right after the part, marked `attached:`.
 */
export const attachedSignature = (sig: ir.Signature | undefined): string | undefined =>
  sig && sig.family !== FAMILY ? carryMarked(ATTACHED, sig, FAMILY) : undefined;

function attachedReasoning(sig: ir.Signature | undefined): Obj[] {
  const signature = attachedSignature(sig);
  return signature ? [{ reasoningContent: { reasoningText: { text: "", signature } } }] : [];
}

/** Reasoning as a client keeps it: signed by whichever family made it. */
export const reasoningText = (text: string, sig: ir.Signature | undefined): Obj => ({
  reasoningContent: {
    reasoningText: { text, ...(sig && { signature: carrySignature(sig, FAMILY) }) },
  },
});

/**
 * Redacted reasoning: Bedrock's own as it came; another family's marked, in base64 (the SDKs
 * read `redactedContent` as bytes).
 */
export function redactedContent(data: string, family: ir.Family): string {
  if (family === FAMILY) return data;
  return new TextEncoder().encode(carryMarked(REDACTED, { family, value: data }, FAMILY))
    .toBase64();
}

/** The client blocks for one IR part (hosted runs and media have no Converse block). */
function encodeBlocks(part: ir.Part): Obj[] {
  switch (part.type) {
    case "text":
      return part.text ? [{ text: part.text }, ...attachedReasoning(part.signature)] : [];
    case "thinking":
      return [reasoningText(part.text, part.signature)];
    case "redacted_thinking":
      return [{ reasoningContent: { redactedContent: redactedContent(part.data, part.family) } }];
    case "tool_call":
      return [
        {
          toolUse: { toolUseId: toolUseId(part.id), name: part.name, input: argumentsObject(part) },
        },
        ...attachedReasoning(part.signature),
      ];
  }
  return [];
}
