/** Non-streaming bodies: an Anthropic Message from upstream to the IR, and the IR to clients. */
import type * as ir from "../../src/kit/ir.ts";
import type { ClientContext, DecodeContext } from "../../src/kit/codec.ts";
import { carrySignature } from "../../src/kit/signature.ts";
import { argumentsObject, errorFinish } from "../shared.ts";
import {
  applyServerResult,
  attachedSignatureBlocks,
  citationBlock,
  citationOf,
  FAMILY,
  finishFromStopReason,
  isServerResult,
  messageId,
  type Obj,
  redactedThinkingBlock,
  serverRun,
  serverToolBlocks,
  serverToolUsage,
  stopReasonFromIr,
  toolUseId,
  unwrapCustomInput,
  usageFromIr,
  usageToIr,
  type WireUsage,
} from "./common.ts";

// ---- upstream ----

export function decodeResponse(body: Obj, ctx: DecodeContext): ir.Response {
  const content = Array.isArray(body.content) ? (body.content as Obj[]) : [];
  const parts: ir.Part[] = [];
  const runs = new Map<string, ir.HostedCallPart>();
  let lastWasText = false;
  for (const b of content) {
    if (b.type === "server_tool_use") {
      // A search or fetch sits where it ran; its result block fills it in.
      const run = serverRun(String(b.id), String(b.name), (b.input ?? {}) as Obj);
      if (run) {
        parts.push(run);
        runs.set(run.id, run);
      }
    } else if (isServerResult(b.type)) {
      const run = runs.get(String(b.tool_use_id));
      if (run) applyServerResult(run, b);
    } else {
      const part = decodeBlock(b, ctx);
      const last = parts.at(-1);
      // A run of text blocks (Anthropic splits cited answers) is one text part.
      if (part?.type === "text" && last?.type === "text" && lastWasText) {
        const start = last.text.length;
        last.text += part.text;
        const moved = (part.citations ?? []).map((c) => ({ ...c, start, end: last.text.length }));
        if (moved.length) last.citations = [...(last.citations ?? []), ...moved];
      } else if (part) parts.push(part);
    }
    lastWasText = b.type === "text";
  }
  const res: ir.Response = {
    id: typeof body.id === "string" ? body.id : ctx.id,
    model: typeof body.model === "string" ? body.model : "",
    created: ctx.now,
    parts,
    finish: finishFromStopReason(body.stop_reason),
  };
  if (parts.some((p) => p.type === "tool_call")) res.finish = "tool_calls";
  if (typeof body.stop_sequence === "string") res.stopSequence = body.stop_sequence;
  if (body.usage && typeof body.usage === "object") res.usage = usageToIr(body.usage as WireUsage);
  return res;
}

/** One upstream content block (other server tools' blocks, never requested, are skipped). */
function decodeBlock(b: Obj, ctx: DecodeContext): ir.Part | undefined {
  switch (b.type) {
    case "text": {
      const part: ir.TextPart = { type: "text", text: String(b.text ?? "") };
      const citations = Array.isArray(b.citations)
        ? (b.citations as Obj[]).map(citationOf).filter((c) => c !== undefined)
        : [];
      // Anthropic cites per block: the whole text.
      const span = { start: 0, end: part.text.length };
      if (citations.length) part.citations = citations.map((c) => ({ ...c, ...span }));
      return part;
    }
    case "thinking":
      return thinkingPart(String(b.thinking ?? ""), String(b.signature ?? ""));
    case "redacted_thinking":
      return { type: "redacted_thinking", data: String(b.data ?? ""), family: FAMILY };
    case "tool_use":
      return toolCallPart(String(b.id), String(b.name), JSON.stringify(b.input ?? {}), ctx);
  }
}

function thinkingPart(text: string, signature: string): ir.ThinkingPart {
  const part: ir.ThinkingPart = { type: "thinking", text };
  if (signature) part.signature = { family: FAMILY, value: signature };
  return part;
}

/** A tool call; calls to the request's custom tools unwrap their `{"input": text}` object. */
function toolCallPart(
  id: string,
  name: string,
  json: string,
  ctx: DecodeContext,
): ir.ToolCallPart {
  const part: ir.ToolCallPart = { type: "tool_call", id, name, arguments: json };
  if (ctx.customTools?.includes(name)) {
    part.kind = "custom";
    part.arguments = unwrapCustomInput(json);
  }
  return part;
}

// ---- ingress ----

export function encodeResponse(res: ir.Response, ctx: ClientContext): Obj {
  const sawToolCall = res.parts.some((p) => p.type === "tool_call");
  const failed = errorFinish(res.finish, sawToolCall);
  if (failed) throw failed;
  const runs = res.parts.filter((p) => p.type === "hosted_call");
  const serverTools = serverToolUsage(runs);
  return {
    id: messageId(res.id),
    type: "message",
    role: "assistant",
    model: ctx.model,
    content: res.parts.flatMap(encodeBlocks),
    stop_reason: stopReasonFromIr(res.finish, res.stopSequence, sawToolCall),
    stop_sequence: res.stopSequence ?? null,
    stop_details: null,
    usage: {
      ...usageFromIr(res.usage ?? { inputTokens: 0, outputTokens: 0 }),
      ...(serverTools && { server_tool_use: serverTools }),
    },
  };
}

/** The client blocks for one IR part (images and audio have no assistant block: skipped). */
function encodeBlocks(part: ir.Part): Obj[] {
  switch (part.type) {
    case "hosted_call": {
      const { use, result } = serverToolBlocks(part);
      return [use, result];
    }
    case "text": {
      const text: Obj = { type: "text", text: part.text };
      if (part.citations?.length) {
        text.citations = part.citations.map((c) => citationBlock(c, part.text));
      }
      const carrier = attachedSignatureBlocks(part.signature);
      return part.text || carrier.length ? [text, ...carrier] : [];
    }
    case "thinking":
      return [{
        type: "thinking",
        thinking: part.text,
        signature: part.signature ? carrySignature(part.signature, FAMILY) : "",
      }];
    case "redacted_thinking":
      return [redactedThinkingBlock(part.data, part.family)];
    case "tool_call": {
      const block = {
        type: "tool_use",
        id: toolUseId(part.id),
        name: part.name,
        input: argumentsObject(part),
      };
      return [block, ...attachedSignatureBlocks(part.signature)];
    }
  }
  return [];
}
