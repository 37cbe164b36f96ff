/**
 * A Responses provider's SSE events → IR stream events. Message content parts become text
 * parts, function/custom calls tool-call parts, and a reasoning item one thinking part (its
 * summary parts joined by blank lines) opened on its first text; the item's
 * `encrypted_content` arrives with `output_item.done` and becomes the part's signature. An
 * item announced only by `output_item.done` (some compatible servers skip the deltas) is
 * emitted whole. `finish` comes only with `response.completed` / `response.incomplete`.
 */
import { kindForStatus } from "../../src/kit/errors.ts";
import type { DecodeContext, Emit, StreamStep } from "../../src/kit/codec.ts";
import type * as ir from "../../src/kit/ir.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { ANTHROPIC_STATUSES, eventObject } from "../shared.ts";
import { citationOf, failure, finishOf, outputItemParts, toolCall } from "./decode_response.ts";
import { type Json, num, obj, str } from "./read.ts";
import { fromWireUsage } from "./usage.ts";

type Out = Emit<ir.StreamEvent>;

/** An open IR part, keyed by output index (and content index for message text). */
interface OpenPart {
  index: number;
  type: "text" | "thinking" | "tool_call";
  /** Arguments already sent (some servers send them only in `.done`). */
  argumentsSent?: boolean;
  /** The summary or content index of the last reasoning text (a new one starts a paragraph). */
  textIndex?: number;
}

export function decodeStream(ctx: DecodeContext): StreamStep<SseEvent, ir.StreamEvent> {
  const decoder = new StreamDecoder(ctx);
  return {
    transform(e, out) {
      const data = eventObject(e.data); // throws for an event that is not a JSON object
      if (data) decoder.on(data, out);
    },
  };
}

class StreamDecoder {
  private started = false;
  private nextIndex = 0;
  private readonly open = new Map<string, OpenPart>();
  /** Output indexes that produced parts, to tell items with deltas from whole ones. */
  private readonly seen = new Set<number>();
  private calledTools = false;

  constructor(private readonly ctx: DecodeContext) {}

  on(e: Json, out: Out) {
    const type = str(e.type) ?? "";
    if (type === "error") return this.error(e, out);
    if (type === "response.failed") return this.error(obj(obj(e.response).error), out);
    this.start(obj(e.response), out);
    const at = num(e.output_index) ?? 0;
    const key = `${at}:${num(e.content_index) ?? 0}`;
    switch (type) {
      case "response.output_item.added":
        return this.itemAdded(obj(e.item), at, out);
      case "response.content_part.added":
        return void this.textPart(key, at, out);
      case "response.output_text.delta":
      case "response.refusal.delta":
        return this.delta(this.textPart(key, at, out), str(e.delta), out);
      case "response.content_part.done":
        return this.stop(key, out);
      case "response.output_text.annotation.added": {
        const part = this.open.get(key);
        for (const citation of citationOf(obj(e.annotation))) {
          if (part) out.enqueue({ type: "citation", index: part.index, citation });
        }
        return;
      }
      case "response.function_call_arguments.delta":
      case "response.custom_tool_call_input.delta":
        return this.argumentsDelta(`${at}`, str(e.delta), out);
      case "response.function_call_arguments.done":
      case "response.custom_tool_call_input.done":
        return this.argumentsDone(`${at}`, str(e.arguments) ?? str(e.input), out);
      case "response.reasoning_summary_text.delta":
        return this.reasoningDelta(at, num(e.summary_index) ?? 0, str(e.delta), out);
      case "response.reasoning_text.delta":
        return this.reasoningDelta(at, num(e.content_index) ?? 0, str(e.delta), out);
      case "response.output_item.done":
        return this.itemDone(obj(e.item), at, out);
      case "response.completed":
      case "response.incomplete":
        return this.finish(obj(e.response), out);
    }
  }

  /** `start` from `response.created`, or from whatever event comes first. */
  private start(response: Json, out: Out) {
    if (this.started) return;
    this.started = true;
    out.enqueue({
      type: "start",
      id: str(response.id) ?? this.ctx.id,
      model: str(response.model) ?? "",
      created: num(response.created_at) ?? this.ctx.now,
    });
  }

  private openPart(
    key: string,
    at: number,
    part: ir.StreamEvent & { type: "part_start" },
    out: Out,
  ) {
    const open: OpenPart = { index: part.index, type: part.part.type as OpenPart["type"] };
    this.open.set(key, open);
    this.seen.add(at);
    out.enqueue(part);
    return open;
  }

  private textPart(key: string, at: number, out: Out): OpenPart {
    return this.open.get(key) ??
      this.openPart(key, at, {
        type: "part_start",
        index: this.nextIndex++,
        part: { type: "text" },
      }, out);
  }

  private delta(part: OpenPart, text: string | undefined, out: Out) {
    if (!text) return;
    out.enqueue({
      type: part.type === "text" ? "text_delta" : "thinking_delta",
      index: part.index,
      text,
    });
  }

  private itemAdded(item: Json, at: number, out: Out) {
    if (item.type !== "function_call" && item.type !== "custom_tool_call") return;
    const { id, name, kind, arguments: args } = toolCall(item);
    this.calledTools = true;
    this.openPart(`${at}`, at, {
      type: "part_start",
      index: this.nextIndex++,
      part: { type: "tool_call", id, name, kind },
    }, out);
    this.argumentsDelta(`${at}`, args, out);
  }

  private argumentsDelta(key: string, json: string | undefined, out: Out) {
    const part = this.open.get(key);
    if (!part || !json) return;
    part.argumentsSent = true;
    out.enqueue({ type: "arguments_delta", index: part.index, json });
  }

  private argumentsDone(key: string, json: string | undefined, out: Out) {
    if (!this.open.get(key)?.argumentsSent) this.argumentsDelta(key, json, out);
  }

  private reasoningDelta(at: number, textIndex: number, text: string | undefined, out: Out) {
    const key = `${at}`;
    let part = this.open.get(key);
    if (!part) {
      part = this.openPart(key, at, {
        type: "part_start",
        index: this.nextIndex++,
        part: { type: "thinking" },
      }, out);
    } else if (part.textIndex !== textIndex) {
      this.delta(part, "\n\n", out);
    }
    part.textIndex = textIndex;
    this.delta(part, text, out);
  }

  private itemDone(item: Json, at: number, out: Out) {
    if (!this.seen.has(at)) return this.whole(item, out);
    const reasoning = this.open.get(`${at}`);
    const encrypted = str(item.encrypted_content);
    if (reasoning?.type === "thinking" && encrypted) {
      out.enqueue({
        type: "signature",
        index: reasoning.index,
        signature: { family: "openai", value: encrypted },
      });
    }
    for (const key of [...this.open.keys()]) {
      if (key === `${at}` || key.startsWith(`${at}:`)) this.stop(key, out);
    }
  }

  /** An item that streamed no deltas: its parts, each opened, filled and closed at once. */
  private whole(item: Json, out: Out) {
    for (const part of outputItemParts(item)) {
      const index = this.nextIndex++;
      out.enqueue({ type: "part_start", index, part: startOf(part) });
      if (part.type === "text") out.enqueue({ type: "text_delta", index, text: part.text });
      for (const citation of part.type === "text" ? part.citations ?? [] : []) {
        out.enqueue({ type: "citation", index, citation });
      }
      if (part.type === "thinking" && part.text) {
        out.enqueue({ type: "thinking_delta", index, text: part.text });
      }
      if (part.type === "thinking" && part.signature) {
        out.enqueue({ type: "signature", index, signature: part.signature });
      }
      if (part.type === "tool_call") {
        this.calledTools = true;
        if (part.arguments) out.enqueue({ type: "arguments_delta", index, json: part.arguments });
      }
      out.enqueue({ type: "part_stop", index });
    }
  }

  private stop(key: string, out: Out) {
    const part = this.open.get(key);
    if (!part) return;
    this.open.delete(key);
    out.enqueue({ type: "part_stop", index: part.index });
  }

  private finish(response: Json, out: Out) {
    for (const key of [...this.open.keys()]) this.stop(key, out);
    const usage = fromWireUsage(response.usage);
    out.enqueue({
      type: "finish",
      reason: finishOf(response, this.calledTools),
      ...(usage && { usage }),
    });
  }

  /** A failure: flat (`{code, message}`) or wrapped like WebSocket errors (`{status, error}`). */
  private error(e: Json, out: Out) {
    const f = failure(e.error ?? e);
    const status = num(e.status) ?? f.status;
    out.enqueue({
      type: "error",
      status,
      kind: kindForStatus(status, ANTHROPIC_STATUSES),
      message: f.message,
    });
  }
}

/** The `part_start` shape of a whole part. */
function startOf(part: ir.Part): (ir.StreamEvent & { type: "part_start" })["part"] {
  switch (part.type) {
    case "hosted_call":
      return part;
    case "tool_call":
      return { type: "tool_call", id: part.id, name: part.name, kind: part.kind };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: part.data, family: part.family };
    case "thinking":
      return { type: "thinking" };
    default:
      return { type: "text" };
  }
}
