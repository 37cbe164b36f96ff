/**
 * An upstream chat stream → IR events. Chat has no part boundaries: a part opens on its first
 * delta and closes when another kind starts or `finish_reason` arrives. The stream is over
 * only at `data: [DONE]` (after the usage chunk); a `finish_reason` without it is a cut.
 */
import { kindForStatus } from "../../src/kit/errors.ts";
import type { DecodeContext, Emit, StreamStep } from "../../src/kit/codec.ts";
import type * as ir from "../../src/kit/ir.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { describeIssues } from "../../src/kit/validate.ts";
import { ANTHROPIC_STATUSES, eventObject, openAiErrorStatus } from "../shared.ts";
import { type ChatChunk, chunkSchema, type ToolCallDelta } from "./schema.ts";
import { finishToIr, readToolCallSignature, reasoningText, toolCallId, usageToIr } from "./wire.ts";

type Out = Emit<ir.StreamEvent>;
type Delta = NonNullable<NonNullable<ChatChunk["choices"]>[number]["delta"]>;

/** The part being filled: text, thinking, or the tool call with this chat `index`. */
type Open = { index: number; kind: "text" | "thinking" } | {
  index: number;
  kind: "tool";
  toolIndex: number;
};

class ChatStreamDecoder {
  #started = false;
  #ended = false;
  #id: string;
  #open: Open | undefined;
  #nextIndex = 0;
  /** Chat tool `index` → IR part index, for every call seen. */
  #tools = new Map<number, number>();
  #finish: string | null | undefined;
  #usage: ir.Usage | undefined;

  constructor(private ctx: DecodeContext) {
    this.#id = ctx.id;
  }

  event(e: SseEvent, out: Out) {
    if (this.#ended) return;
    if (e.data.trim() === "[DONE]") return this.#done(out);
    const json = eventObject(e.data); // throws for a chunk that is not a JSON object
    const error = json?.error;
    if (e.event === "error" || error) return this.#upstreamError(out, error ?? json);
    const parsed = chunkSchema.safeParse(json);
    if (!parsed.success) {
      return this.#fail(out, 502, describeIssues(parsed.error).message);
    }
    this.#chunk(parsed.data, out);
  }

  #chunk(c: ChatChunk, out: Out) {
    this.#start(out, c);
    if (c.usage) this.#usage = usageToIr(c.usage);
    // We never ask for n > 1, so choice 0 is the only one.
    const choice = c.choices?.find((ch) => (ch.index ?? 0) === 0);
    if (!choice) return;
    if (choice.delta) this.#delta(choice.delta, out);
    if (this.#ended) return;
    if (choice.finish_reason) {
      this.#finish = choice.finish_reason;
      this.#close(out);
    }
  }

  /** `start` goes out once, on the first chunk (or at [DONE] if there was none). */
  #start(out: Out, c?: ChatChunk) {
    if (this.#started) return;
    this.#started = true;
    this.#id = c?.id ?? this.ctx.id;
    const created = c?.created ?? this.ctx.now;
    out.enqueue({ type: "start", id: this.#id, model: c?.model ?? "", created });
  }

  #delta(d: Delta, out: Out) {
    const thinking = reasoningText(d);
    if (thinking) {
      out.enqueue({ type: "thinking_delta", index: this.#part("thinking", out), text: thinking });
    }
    for (const text of [d.content, d.refusal]) {
      if (text) out.enqueue({ type: "text_delta", index: this.#part("text", out), text });
    }
    for (const [i, call] of (d.tool_calls ?? []).entries()) {
      this.#toolCall(call, i, out);
      if (this.#ended) return;
    }
  }

  /** The open part of this kind, or a new one after closing the previous. */
  #part(kind: "text" | "thinking", out: Out): number {
    if (this.#open?.kind === kind) return this.#open.index;
    this.#close(out);
    const index = this.#nextIndex++;
    this.#open = { index, kind };
    out.enqueue({ type: "part_start", index, part: { type: kind } });
    return index;
  }

  #toolCall(call: ToolCallDelta, position: number, out: Out) {
    const toolIndex = call.index ?? position;
    const index = this.#tools.get(toolIndex);
    if (index === undefined) return this.#startToolCall(call, toolIndex, out);
    if (this.#open?.kind !== "tool" || this.#open.toolIndex !== toolIndex) {
      // OpenAI-compatible servers finish one call before the next; a part cannot reopen.
      const message = `tool call ${toolIndex} resumed after another part`;
      return this.#fail(out, 502, message);
    }
    const signature = readToolCallSignature(call);
    if (signature) out.enqueue({ type: "signature", index, signature });
    this.#arguments(call, index, out);
  }

  #startToolCall(call: ToolCallDelta, toolIndex: number, out: Out) {
    this.#close(out);
    const index = this.#nextIndex++;
    this.#tools.set(toolIndex, index);
    this.#open = { index, kind: "tool", toolIndex };
    const custom = call.type === "custom";
    const part: Extract<ir.StreamEvent, { type: "part_start" }>["part"] = {
      type: "tool_call",
      id: toolCallId(call.id, this.#id, toolIndex),
      name: (custom ? call.custom?.name : call.function?.name) ?? "",
    };
    if (custom) part.kind = "custom";
    const signature = readToolCallSignature(call);
    if (signature) part.signature = signature;
    out.enqueue({ type: "part_start", index, part });
    this.#arguments(call, index, out);
  }

  /** Function arguments or custom-tool input, as it arrives. */
  #arguments(call: ToolCallDelta, index: number, out: Out) {
    const json = call.function?.arguments ?? call.custom?.input;
    if (json) out.enqueue({ type: "arguments_delta", index, json });
  }

  #close(out: Out) {
    if (this.#open) out.enqueue({ type: "part_stop", index: this.#open.index });
    this.#open = undefined;
  }

  #done(out: Out) {
    this.#start(out);
    this.#close(out);
    this.#ended = true;
    const reason = finishToIr(this.#finish, this.#tools.size > 0);
    out.enqueue(
      this.#usage ? { type: "finish", reason, usage: this.#usage } : { type: "finish", reason },
    );
  }

  /** `data: {"error":{…}}` (or `event: error`) after the HTTP 200. */
  #upstreamError(out: Out, error: unknown) {
    const e = (error ?? {}) as { message?: unknown; type?: unknown; code?: unknown };
    const type = typeof e.type === "string" ? e.type : "upstream_error";
    const message = typeof e.message === "string" ? e.message : JSON.stringify(error);
    this.#fail(out, openAiErrorStatus(type, e.code), message);
  }

  #fail(out: Out, status: number, message: string) {
    this.#ended = true;
    out.enqueue({
      type: "error",
      status,
      kind: kindForStatus(status, ANTHROPIC_STATUSES),
      message,
    });
  }
}

export function decodeStream(ctx: DecodeContext): StreamStep<SseEvent, ir.StreamEvent> {
  const decoder = new ChatStreamDecoder(ctx);
  return { transform: (e, out) => decoder.event(e, out) };
}
