/** Mappings the Chat Completions decoders and encoders share (both directions). */
import type { z } from "zod";
import { GatewayError } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import { carrySignature, readSignature } from "../../src/kit/signature.ts";
import type { ChatUsage, customCall, functionCall } from "./schema.ts";
import { citedSpan } from "../hosted.ts";
import { finishByName } from "../shared.ts";

export const FAMILY: ir.Family = "openai";

export type Obj = Record<string, unknown>;

/** Chat's `prompt_tokens` already includes cache reads/writes, as the IR's total does (§5.6). */
export function usageToIr(u: ChatUsage): ir.Usage {
  const usage: ir.Usage = { inputTokens: u.prompt_tokens, outputTokens: u.completion_tokens };
  const cached = u.prompt_tokens_details?.cached_tokens;
  const written = u.prompt_tokens_details?.cache_write_tokens;
  const reasoning = u.completion_tokens_details?.reasoning_tokens;
  if (typeof cached === "number") usage.cacheReadTokens = cached;
  if (typeof written === "number") usage.cacheWriteTokens = written;
  if (typeof reasoning === "number") usage.reasoningTokens = reasoning;
  return usage;
}

export function usageFromIr(u: ir.Usage): Obj {
  const details: Obj = { cached_tokens: u.cacheReadTokens ?? 0 };
  if (u.cacheWriteTokens !== undefined) details.cache_write_tokens = u.cacheWriteTokens;
  return {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
    prompt_tokens_details: details,
    completion_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
  };
}

const FINISH_FROM_CHAT: Record<string, ir.FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  function_call: "tool_calls",
  content_filter: "content_filter",
  // Not OpenAI's, but documented by chat-compatible servers for answers that did not end as the
  // model meant: Mistral's and OpenRouter's `error`, vLLM's `abort`, `error` and `repetition` (it
  // cut a looping answer), DeepSeek's `insufficient_system_resource`; Mistral's context cap.
  error: "error",
  abort: "error",
  repetition: "error",
  insufficient_system_resource: "error",
  model_length: "length",
};

/**
 * Tool calls win over whatever the upstream said (§5.5). Any other name reads as a stop: chat is
 * spoken by many servers besides OpenAI's, and several end a finished answer with a name of their
 * own (Hugging Face TGI's `eos_token`, Together's `eos`), so an unknown name cannot mean an error.
 */
export function finishToIr(reason: string | null | undefined, sawToolCall: boolean) {
  return sawToolCall ? "tool_calls" : finishByName(FINISH_FROM_CHAT, reason, "stop");
}

const FINISH_TO_CHAT: Record<ir.FinishReason, string> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  content_filter: "content_filter",
  // Chat has no "re-send the turn" reason; the text so far ends normally.
  pause: "stop",
  // Nor an error one: an answer ending in error ends with the stream's error chunk or an error
  // status (shared.ts `errorFinish`), one ending in tool calls with `tool_calls`.
  error: "tool_calls",
};

export function finishFromIr(reason: ir.FinishReason, sawToolCall: boolean): string {
  return sawToolCall ? "tool_calls" : FINISH_TO_CHAT[reason];
}

/** Client-facing completion id: the IR id in chat style. */
export const completionId = (id: string) => id.startsWith("chatcmpl-") ? id : `chatcmpl-${id}`;

/** Tool-call ids pass through; a missing one gets a stable id from the response id. */
export const toolCallId = (id: string | null | undefined, responseId: string, index: number) =>
  id || `call_${responseId}_${index}`;

/** `reasoning_content` (DeepSeek, vLLM, CLIProxyAPI) or `reasoning` (OpenRouter, newer vLLM). */
export function reasoningText(m: { reasoning_content?: string | null; reasoning?: unknown }) {
  return m.reasoning_content || (typeof m.reasoning === "string" ? m.reasoning : "");
}

// ---- tool calls ----

/** A chat tool call (function or custom) from an IR one; `extra` carries a signature. */
export function toolCallFromIr(p: ir.ToolCallPart, id: string, extra: Obj): Obj {
  if (p.kind === "custom") {
    return { id, type: "custom", custom: { name: p.name, input: p.arguments }, ...extra };
  }
  return { id, type: "function", function: { name: p.name, arguments: p.arguments }, ...extra };
}

/** A validated chat tool call to IR; undefined for a call type chat does not define. */
export function toolCallToIr(call: { type: string }): ir.ToolCallPart | undefined {
  let part: ir.ToolCallPart;
  if (call.type === "function") {
    const c = call as z.infer<typeof functionCall>;
    part = { type: "tool_call", id: c.id, name: c.function.name, arguments: c.function.arguments };
  } else if (call.type === "custom") {
    const c = call as z.infer<typeof customCall>;
    const { name, input } = c.custom;
    part = { type: "tool_call", id: c.id, name, arguments: input, kind: "custom" };
  } else {
    return undefined;
  }
  const signature = readToolCallSignature(call);
  if (signature) part.signature = signature;
  return part;
}

// ---- signature carriers ----

/** A Gemini thought signature rides on a tool call in `extra_content.google` (Gemini's convention). */
export function signatureExtra(value: string | undefined): Obj {
  return value === undefined ? {} : { extra_content: { google: { thought_signature: value } } };
}

/** `extra_content` for a client: foreign signatures keep their family behind a prefix. */
export const clientSignatureExtra = (sig: ir.Signature | undefined) =>
  signatureExtra(sig && carrySignature(sig, FAMILY));

interface SignatureSlot {
  extra_content?: { google?: { thought_signature?: string | null } | null } | null;
}

export function readToolCallSignature(call: object): ir.Signature | undefined {
  const raw = (call as SignatureSlot).extra_content?.google?.thought_signature;
  return raw ? readSignature(raw, FAMILY) : undefined;
}

/** LiteLLM's `thinking_blocks` entry, carrying Anthropic thinking through a chat client. */
type ThinkingBlock =
  | { type: "thinking"; thinking: string; signature?: string }
  | { type: "redacted_thinking"; data: string };

export function thinkingBlockFromIr(
  part: ir.ThinkingPart | ir.RedactedThinkingPart,
): ThinkingBlock {
  if (part.type === "redacted_thinking") {
    return {
      type: "redacted_thinking",
      data: carrySignature({ family: part.family, value: part.data }, FAMILY),
    };
  }
  const block: ThinkingBlock = { type: "thinking", thinking: part.text };
  if (part.signature) block.signature = carrySignature(part.signature, FAMILY);
  return block;
}

export function thinkingBlockToIr(
  block: { type: "thinking"; thinking: string; signature?: string | null } | {
    type: "redacted_thinking";
    data: string;
  },
): ir.ThinkingPart | ir.RedactedThinkingPart {
  if (block.type === "redacted_thinking") {
    const { family, value } = readSignature(block.data, FAMILY);
    return { type: "redacted_thinking", data: value, family };
  }
  const part: ir.ThinkingPart = { type: "thinking", text: block.thinking };
  if (block.signature) part.signature = readSignature(block.signature, FAMILY);
  return part;
}

/**
 * `thinking_blocks` are only worth sending when they carry something `reasoning_content`
 * cannot: a signature or redacted data the next turn must replay.
 */
export function needsThinkingBlocks(parts: (ir.ThinkingPart | ir.RedactedThinkingPart)[]) {
  return parts.some((p) => p.type === "redacted_thinking" || p.signature);
}

/** A malformed upstream body is the provider's fault: 502, not the client's 400. */
export const badUpstream = (message: string) =>
  new GatewayError(502, "upstream", `upstream chat completion: ${message}`);

/** A citation as chat's `url_citation` annotation; `offset` is where its part starts. */
export function urlCitation(c: ir.Citation, partText: string, offset: number): Obj {
  const { start, end } = citedSpan(c, partText);
  return {
    type: "url_citation",
    url_citation: {
      start_index: offset + start,
      end_index: offset + end,
      title: c.title ?? c.url,
      url: c.url,
    },
  };
}
