/** A Responses provider's answer → IR (non-streaming), and what streams share with it. */
import type { DecodeContext } from "../../src/codec.ts";
import { GatewayError, kindForStatus } from "../../src/errors.ts";
import type * as ir from "../../src/ir.ts";
import { appendReasoning, reasoningText } from "./carrier.ts";
import { arr, type Json, num, obj, str } from "./read.ts";
import { fromWireUsage } from "./usage.ts";
import { openAiErrorStatus } from "../shared.ts";

export function decodeResponse(body: Json, ctx: DecodeContext): ir.Response {
  if (body.status === "failed") {
    const f = failure(body.error);
    throw new GatewayError(f.status, kindForStatus(f.status), f.message);
  }
  const parts = arr(body.output).flatMap((item) => outputItemParts(obj(item)));
  const res: ir.Response = {
    id: str(body.id) ?? ctx.id,
    model: str(body.model) ?? "",
    created: num(body.created_at) ?? ctx.now,
    parts,
    finish: finishOf(body, parts.some((p) => p.type === "tool_call")),
  };
  const usage = fromWireUsage(body.usage);
  if (usage) res.usage = usage;
  return res;
}

/** One output item's parts (hosted-tool items never come back: the gateway sends none). */
export function outputItemParts(item: Json): ir.Part[] {
  switch (item.type) {
    case "message":
      return arr(item.content).map(obj).flatMap((c) => {
        const text = str(c.text) ?? str(c.refusal);
        return text === undefined ? [] : [{ type: "text", text } as const];
      });
    case "function_call":
    case "custom_tool_call":
      return [toolCall(item)];
    case "reasoning": {
      const parts: ir.Part[] = [];
      appendReasoning(parts, itemReasoningText(item), str(item.encrypted_content));
      return parts;
    }
    default:
      return [];
  }
}

export function toolCall(item: Json): ir.ToolCallPart {
  const custom = item.type === "custom_tool_call";
  return {
    type: "tool_call",
    id: str(item.call_id) ?? "",
    name: str(item.name) ?? "",
    arguments: str(custom ? item.input : item.arguments) ?? "",
    kind: custom ? "custom" : "function",
  };
}

const itemReasoningText = (item: Json) =>
  reasoningText(arr(item.summary).map(obj).map(textOf), arr(item.content).map(obj).map(textOf));

const textOf = (p: Json) => ({ text: str(p.text) ?? "" });

/** The finish reason of a completed or incomplete response (tool calls win, §5.5). */
export function finishOf(response: Json, calledTools: boolean): ir.FinishReason {
  if (response.status === "incomplete") {
    return obj(response.incomplete_details).reason === "content_filter"
      ? "content_filter"
      : "length";
  }
  return calledTools ? "tool_calls" : "stop";
}

/** A `response.failed` error or standalone `error` event: its status, code and message. */
export function failure(error: unknown): { status: number; code: string; message: string } {
  const e = obj(error);
  const code = str(e.code) ?? str(e.type) ?? "server_error";
  return {
    status: openAiErrorStatus(e.type, code),
    code,
    message: str(e.message) ?? "the upstream response failed",
  };
}
