/** Upstream: a Bedrock Converse JSON response to the IR. */
import type * as ir from "../../src/kit/ir.ts";
import type { DecodeContext } from "../../src/kit/codec.ts";
import { CUSTOM_INPUT_KEY } from "../shared.ts";
import {
  FAMILY,
  finishFromStopReason,
  isObj,
  type Obj,
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
