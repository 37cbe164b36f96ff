/**
 * IR events → chat chunks, in the order the openai SDK's stream helper requires: a first
 * `{role:"assistant",content:""}` delta; each tool call's first fragment with `index`, `id`,
 * `type` and its name (arguments `""`); a chunk with `finish_reason`; the usage chunk
 * (`choices:[]`) when the client asked for it; then `[DONE]`.
 */
import { openAiDialect } from "../openai.ts";
import type { ClientContext, Emit, StreamStep } from "../../src/kit/codec.ts";
import type * as ir from "../../src/kit/ir.ts";
import { dataEvent, type SseEvent } from "../../src/kit/sse.ts";
import { errorEvent, errorFinish, streamErrorBody } from "../shared.ts";
import {
  clientSignatureExtra,
  completionId,
  finishFromIr,
  needsThinkingBlocks,
  type Obj,
  thinkingBlockFromIr,
  toolCallFromIr,
  toolCallId,
  urlCitation,
  usageFromIr,
} from "./wire.ts";

type Out = Emit<SseEvent>;
type PartStart = Extract<ir.StreamEvent, { type: "part_start" }>["part"];

const DONE: SseEvent = { data: "[DONE]" };

class ChatStreamEncoder {
  #id = completionId("");
  #created = 0;
  #usage: ir.Usage | undefined;
  /** IR part index → the call's chat `index` and kind. */
  #tools = new Map<number, { index: number; custom: boolean }>();
  /**
   * Thinking parts by IR index, kept whole: if one turns out signed (or redacted), the final
   * `thinking_blocks` delta must carry them all. The SDK helper keeps the last value of an
   * unknown delta field, so they go out once, complete.
   */
  #thinking = new Map<number, ir.ThinkingPart | ir.RedactedThinkingPart>();
  /** Text parts by IR index: where each starts in the content, and its text (for citations). */
  #texts = new Map<number, { start: number; text: string }>();
  #contentLength = 0;
  #citations: { index: number; citation: ir.Citation }[] = [];

  constructor(private ctx: ClientContext) {}

  event(e: ir.StreamEvent, out: Out) {
    switch (e.type) {
      case "start":
        this.#id = completionId(e.id);
        this.#created = e.created;
        this.#usage = e.usage;
        return this.#send(out, { role: "assistant", content: "" });
      case "part_start":
        return this.#partStart(e.index, e.part, out);
      case "text_delta": {
        const part = this.#texts.get(e.index) ?? { start: this.#contentLength, text: "" };
        this.#texts.set(e.index, part);
        part.text += e.text;
        this.#contentLength += e.text.length;
        return this.#send(out, { content: e.text });
      }
      case "citation":
        this.#citations.push({ index: e.index, citation: e.citation });
        return;
      case "thinking_delta":
        this.#appendThinking(e.index, e.text);
        return this.#send(out, { reasoning_content: e.text });
      case "arguments_delta":
        return this.#toolDelta(
          out,
          e.index,
          (custom) => custom ? { custom: { input: e.json } } : { function: { arguments: e.json } },
        );
      case "signature":
        return this.#signature(e.index, e.signature, out);
      case "part_stop":
        return;
      case "usage":
        this.#usage = e.usage;
        return;
      case "finish":
        return this.#finish(e, out);
      case "error":
        return this.#error(e, out);
    }
  }

  #partStart(index: number, part: PartStart, out: Out) {
    if (part.type === "thinking") this.#thinking.set(index, { type: "thinking", text: "" });
    if (part.type === "redacted_thinking") this.#thinking.set(index, { ...part });
    if (part.type !== "tool_call") return;
    const chatIndex = this.#tools.size;
    const custom = part.kind === "custom";
    this.#tools.set(index, { index: chatIndex, custom });
    const call: ir.ToolCallPart = { ...part, type: "tool_call", arguments: "" };
    const id = toolCallId(part.id, this.#id, chatIndex);
    const fragment = toolCallFromIr(call, id, clientSignatureExtra(part.signature));
    this.#send(out, { tool_calls: [{ index: chatIndex, ...fragment }] });
  }

  #appendThinking(index: number, text: string) {
    const part = this.#thinking.get(index);
    if (part?.type === "thinking") part.text += text;
  }

  /** A fragment of a started tool call; `body` gets whether it is a custom tool. */
  #toolDelta(out: Out, index: number, body: (custom: boolean) => Obj) {
    const tool = this.#tools.get(index);
    if (tool) this.#send(out, { tool_calls: [{ index: tool.index, ...body(tool.custom) }] });
  }

  /** A tool call's signature that came after its start; a thinking signature waits for the end. */
  #signature(index: number, signature: ir.Signature, out: Out) {
    const thinking = this.#thinking.get(index);
    if (thinking?.type === "thinking") thinking.signature = signature;
    else this.#toolDelta(out, index, () => clientSignatureExtra(signature));
  }

  #finish(e: Extract<ir.StreamEvent, { type: "finish" }>, out: Out) {
    const failed = errorFinish(e.reason, this.#tools.size > 0);
    if (failed) return this.#error(errorEvent(failed), out);
    const thinking = [...this.#thinking.values()];
    if (needsThinkingBlocks(thinking)) {
      this.#send(out, { thinking_blocks: thinking.map(thinkingBlockFromIr) });
    }
    // Annotations need whole parts: they go out once, in one delta before the finish.
    const annotations = this.#citations.flatMap(({ index, citation }) => {
      const part = this.#texts.get(index);
      return part ? [urlCitation(citation, part.text, part.start)] : [];
    });
    if (annotations.length) this.#send(out, { annotations });
    this.#send(out, {}, finishFromIr(e.reason, this.#tools.size > 0));
    const usage = e.usage ?? this.#usage;
    if (this.ctx.streamUsage && usage) {
      out.enqueue(dataEvent({ ...this.#base(), choices: [], usage: usageFromIr(usage) }));
    }
    out.enqueue(DONE);
  }

  /** The openai SDK throws on any chunk with a top-level `error`. */
  #error(e: Extract<ir.StreamEvent, { type: "error" }>, out: Out) {
    out.enqueue(dataEvent(streamErrorBody(openAiDialect, e)));
    out.enqueue(DONE);
  }

  #base() {
    return {
      id: this.#id,
      object: "chat.completion.chunk",
      created: this.#created,
      model: this.ctx.model,
    };
  }

  #send(out: Out, delta: Obj, finishReason: string | null = null) {
    const choice = { index: 0, delta, logprobs: null, finish_reason: finishReason };
    out.enqueue(dataEvent({ ...this.#base(), choices: [choice] }));
  }
}

export function encodeStream(ctx: ClientContext): StreamStep<ir.StreamEvent, SseEvent> {
  const encoder = new ChatStreamEncoder(ctx);
  return { transform: (e, out) => encoder.event(e, out) };
}
