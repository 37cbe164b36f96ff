/**
 * Upstream: Gemini response chunks to IR events. A streamed chunk and a whole response have
 * the same shape, so one decoder serves both (`decodeResponse` folds its events).
 *
 * Gemini has no block boundaries: a text part opens on the first text fragment and closes
 * when something else arrives; every `functionCall` arrives whole and becomes start, one
 * arguments delta, stop.
 */
import { kindForStatus } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import type { DecodeContext } from "../../src/kit/codec.ts";
import { CUSTOM_INPUT_KEY, nonEmpty } from "../shared.ts";
import { isObject } from "./json_schema.ts";
import { FAMILY, responseCallId } from "./parts.ts";

import { AnswerText, decodeGrounding } from "./grounding.ts";

type Obj = Record<string, unknown>;

/** Stopped for what the answer said (or would have shown): a refusal, never a success. */
const CONTENT_FILTER = new Set([
  "SAFETY",
  "RECITATION",
  "LANGUAGE",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
]);

/**
 * Every other reason (`OTHER`, the model breaking the tool protocol, `NO_IMAGE`,
 * `IMAGE_OTHER`, `FINISH_REASON_UNSPECIFIED`, a value added later) is an error, never a quiet
 * stop: the answer did not end as the model meant it to. `CONTINUATION` (long decode: the
 * request's output cap, with a token to go on) is a length stop to whoever does not go on, even
 * after function calls (the answer is not over); otherwise calls end as calls.
 */
function decodeFinish(reason: string, sawToolCall: boolean): ir.FinishReason {
  if (reason === "CONTINUATION") return "length";
  if (sawToolCall) return "tool_calls";
  if (reason === "MAX_TOKENS") return "length";
  if (reason === "STOP") return "stop";
  return CONTENT_FILTER.has(reason) ? "content_filter" : "error";
}

const count = (v: unknown) => (typeof v === "number" ? v : 0);

/** §5.6: the prompt includes cached content; output is candidates plus thoughts. */
export function decodeUsage(meta: unknown): ir.Usage | undefined {
  if (!isObject(meta)) return undefined;
  const usage: ir.Usage = {
    inputTokens: count(meta.promptTokenCount) + count(meta.toolUsePromptTokenCount),
    outputTokens: count(meta.candidatesTokenCount) + count(meta.thoughtsTokenCount),
  };
  if (typeof meta.cachedContentTokenCount === "number") {
    usage.cacheReadTokens = meta.cachedContentTokenCount;
  }
  if (typeof meta.thoughtsTokenCount === "number") usage.reasoningTokens = meta.thoughtsTokenCount;
  return usage;
}

export class ChunkDecoder {
  private started = false;
  private finished = false;
  private responseId: string;
  private open?: { index: number; kind: "text" | "thinking" };
  private nextIndex = 0;
  private calls = 0;
  private usage?: ir.Usage;
  /** The answer text so far, to place grounding offsets (bytes of the whole answer). */
  private readonly text = new AnswerText();
  /** The candidate of the last chunk with hosted-tool metadata (Gemini sends it at the end). */
  private grounded?: Obj;

  constructor(private readonly ctx: DecodeContext) {
    this.responseId = ctx.id;
  }

  /** The IR events one chunk adds; nothing after the chunk that finished the response. */
  decode(chunk: Obj): ir.StreamEvent[] {
    if (this.finished) return [];
    if (isObject(chunk.error)) return [decodeError(chunk.error)];
    const out: ir.StreamEvent[] = [];
    this.usage = decodeUsage(chunk.usageMetadata) ?? this.usage;
    if (!this.started) this.start(chunk, out);
    const candidate = Array.isArray(chunk.candidates) && isObject(chunk.candidates[0])
      ? chunk.candidates[0]
      : undefined;
    const parts = isObject(candidate?.content) ? candidate.content.parts : undefined;
    for (const part of Array.isArray(parts) ? parts : []) if (isObject(part)) this.part(part, out);
    if (candidate && (candidate.groundingMetadata || candidate.urlContextMetadata)) {
      this.grounded = candidate;
    }
    const reason = candidate ? candidate.finishReason : blockReason(chunk);
    if (typeof reason === "string") this.finish(reason, out, candidate?.continuationToken);
    return out;
  }

  private start(chunk: Obj, out: ir.StreamEvent[]) {
    this.started = true;
    if (typeof chunk.responseId === "string" && chunk.responseId) {
      this.responseId = chunk.responseId;
    }
    const model = typeof chunk.modelVersion === "string" ? chunk.modelVersion : "";
    // Gemini reports the prompt count on every chunk: the start already knows the input size.
    out.push({
      type: "start",
      id: this.responseId,
      model,
      created: this.ctx.now,
      ...(this.usage && { usage: this.usage }),
    });
  }

  private part(part: Obj, out: ir.StreamEvent[]) {
    const signature: ir.Signature | undefined = typeof part.thoughtSignature === "string"
      ? { family: FAMILY, value: part.thoughtSignature }
      : undefined;
    if (isObject(part.functionCall)) return this.call(part.functionCall, signature, out);
    // Code execution, images and the like are never requested by the gateway: only text counts.
    const text = typeof part.text === "string" ? part.text : "";
    if (!text) {
      if (!signature) return;
      // A signature on an empty fragment belongs to the part it ends.
      if (this.open) return void out.push({ type: "signature", index: this.open.index, signature });
    }
    const kind = part.thought === true ? "thinking" : "text";
    if (this.open?.kind !== kind) {
      this.close(out);
      this.open = { index: this.nextIndex++, kind };
      out.push({ type: "part_start", index: this.open.index, part: { type: kind } });
    }
    const index = this.open.index;
    if (text && kind === "text") this.text.add(index, text);
    if (text) {
      out.push(
        kind === "text"
          ? { type: "text_delta", index, text }
          : { type: "thinking_delta", index, text },
      );
    }
    if (signature) out.push({ type: "signature", index, signature });
  }

  private call(call: Obj, signature: ir.Signature | undefined, out: ir.StreamEvent[]) {
    this.close(out);
    const index = this.nextIndex++;
    const name = typeof call.name === "string" ? call.name : "";
    const id = typeof call.id === "string" && call.id
      ? call.id
      : responseCallId(this.responseId, this.calls);
    this.calls++;
    const args = isObject(call.args) ? call.args : {};
    const custom = this.ctx.customTools?.includes(name) ?? false;
    // Custom (free-text) tools were declared as a function taking `{input}`.
    const input = args[CUSTOM_INPUT_KEY];
    const json = custom
      ? (typeof input === "string" ? input : JSON.stringify(input ?? ""))
      : JSON.stringify(args);
    out.push(
      {
        type: "part_start",
        index,
        part: {
          type: "tool_call",
          id,
          name,
          ...(custom && { kind: "custom" as const }),
          ...(signature && { signature }),
        },
      },
      { type: "arguments_delta", index, json },
      { type: "part_stop", index },
    );
  }

  /** Citations while their text part is still open, then each hosted run as a whole part. */
  private grounding(candidate: Obj, out: ir.StreamEvent[]) {
    const { citations, calls } = decodeGrounding(candidate, this.text, this.responseId);
    out.push(...citations);
    this.close(out);
    for (const part of calls) {
      const index = this.nextIndex++;
      out.push({ type: "part_start", index, part }, { type: "part_stop", index });
    }
  }

  private close(out: ir.StreamEvent[]) {
    if (this.open) out.push({ type: "part_stop", index: this.open.index });
    this.open = undefined;
  }

  /** `token`: the candidate's `continuationToken`, which only a `CONTINUATION` end goes on with. */
  private finish(reason: string, out: ir.StreamEvent[], token: unknown) {
    if (this.grounded) this.grounding(this.grounded, out);
    this.close(out);
    this.finished = true;
    const continuation = reason === "CONTINUATION" ? nonEmpty(token) : undefined;
    out.push({
      type: "finish",
      reason: decodeFinish(reason, this.calls > 0),
      ...(this.usage && { usage: this.usage }),
      ...(continuation && { continuation }),
    });
  }
}

/** A blocked prompt comes back with no candidates, only `promptFeedback.blockReason`. */
function blockReason(chunk: Obj): string | undefined {
  return isObject(chunk.promptFeedback) && typeof chunk.promptFeedback.blockReason === "string"
    ? "SAFETY"
    : undefined;
}

function decodeError(error: Obj): ir.StreamEvent {
  const status = typeof error.code === "number" ? error.code : 500;
  return {
    type: "error",
    status,
    kind: kindForStatus(status),
    message: typeof error.message === "string" ? error.message : "upstream error",
  };
}
