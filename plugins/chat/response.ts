/** Non-streaming completions: IR → chat client body, and upstream chat body → IR. */
import type { ClientContext, DecodeContext } from "../../src/kit/codec.ts";
import type * as ir from "../../src/kit/ir.ts";
import { describeIssues } from "../../src/kit/validate.ts";
import { type ChatResponse, responseSchema } from "./schema.ts";
import { errorFinish } from "../shared.ts";
import {
  badUpstream,
  clientSignatureExtra,
  completionId,
  finishFromIr,
  finishToIr,
  needsThinkingBlocks,
  type Obj,
  reasoningText,
  thinkingBlockFromIr,
  toolCallFromIr,
  toolCallId,
  toolCallToIr,
  urlCitation,
  usageFromIr,
  usageToIr,
} from "./wire.ts";

// ---- IR → client ----

export function encodeResponse(res: ir.Response, ctx: ClientContext): Obj {
  const toolCalls = res.parts.filter((p) => p.type === "tool_call");
  const failed = errorFinish(res.finish, toolCalls.length > 0);
  if (failed) throw failed;
  const body: Obj = {
    id: completionId(res.id),
    object: "chat.completion",
    created: res.created,
    model: ctx.model,
    choices: [{
      index: 0,
      message: encodeMessage(res),
      logprobs: null,
      finish_reason: finishFromIr(res.finish, toolCalls.length > 0),
    }],
  };
  if (res.usage) body.usage = usageFromIr(res.usage);
  return body;
}

/**
 * Text parts are joined as a stream would join their deltas. Thinking goes out as the
 * non-standard `reasoning_content`, plus `thinking_blocks` when signatures must come back.
 */
function encodeMessage(res: ir.Response): Obj {
  const texts = res.parts.filter((p) => p.type === "text");
  const thinking = res.parts.filter((p) => p.type === "thinking" || p.type === "redacted_thinking");
  const toolCalls = res.parts.filter((p) => p.type === "tool_call");
  const message: Obj = {
    role: "assistant",
    content: texts.length ? texts.map((p) => p.text).join("") : null,
    refusal: null,
  };
  const annotations = urlCitations(texts);
  if (annotations.length) message.annotations = annotations;
  const reasoning = thinking.filter((p) => p.type === "thinking").map((p) => p.text).join("");
  if (reasoning) message.reasoning_content = reasoning;
  if (needsThinkingBlocks(thinking)) message.thinking_blocks = thinking.map(thinkingBlockFromIr);
  if (toolCalls.length) {
    message.tool_calls = toolCalls.map((p, i) =>
      toolCallFromIr(p, toolCallId(p.id, res.id, i), clientSignatureExtra(p.signature))
    );
  }
  return message;
}

/** The text parts' citations as `url_citation` annotations on the joined content. */
function urlCitations(texts: ir.TextPart[]): Obj[] {
  let at = 0;
  return texts.flatMap((p) => {
    const start = at;
    at += p.text.length;
    return (p.citations ?? []).map((c) => urlCitation(c, p.text, start));
  });
}

// ---- upstream → IR ----

export function decodeResponse(raw: Record<string, unknown>, ctx: DecodeContext): ir.Response {
  const parsed = responseSchema.safeParse(raw);
  if (!parsed.success) throw badUpstream(describeIssues(parsed.error).message);
  const body = parsed.data;
  const choice = body.choices[0];
  if (!choice) throw badUpstream("choices: expected at least one choice");
  const id = body.id ?? ctx.id;
  const parts = decodeMessage(choice.message, id);
  const res: ir.Response = {
    id,
    model: body.model ?? "",
    created: body.created ?? ctx.now,
    parts,
    finish: finishToIr(choice.finish_reason, parts.some((p) => p.type === "tool_call")),
  };
  if (body.usage) res.usage = usageToIr(body.usage);
  return res;
}

type UpstreamMessage = ChatResponse["choices"][number]["message"];

/** Reasoning text first (it came first), then the answer, then tool calls. */
function decodeMessage(m: UpstreamMessage, responseId: string): ir.Part[] {
  const parts: ir.Part[] = [];
  const reasoning = reasoningText(m);
  if (reasoning) parts.push({ type: "thinking", text: reasoning });
  const content = typeof m.content === "string"
    ? m.content
    : (m.content ?? []).map(partText).join("");
  if (content) parts.push({ type: "text", text: content });
  if (m.refusal) parts.push({ type: "text", text: m.refusal });
  (m.tool_calls ?? []).forEach((call, i) => parts.push(decodeToolCall(call, responseId, i)));
  return parts;
}

const partText = (p: Obj) => String(p.type === "refusal" ? p.refusal : p.text ?? "");

/** Ids of tool calls are required, but not every chat-compatible server fills them. */
function decodeToolCall(call: { type: string }, responseId: string, i: number): ir.ToolCallPart {
  const part = toolCallToIr(call);
  if (!part) {
    throw badUpstream(`choices[0].message.tool_calls[${i}].type: unknown type "${call.type}"`);
  }
  part.id = toolCallId(part.id, responseId, i);
  return part;
}
