/**
 * IR stream events → Responses stream events, in the order the openai SDK's stream helper and
 * Codex require: `response.created`, `response.in_progress`, then per output item
 * `output_item.added`, its content events and `output_item.done`, then exactly one terminal
 * event carrying the full response (the SDK and Codex take the final output from it). The
 * same events become WebSocket text frames, so everything a client needs is in `data`.
 */
import { openAiErrorCode } from "../openai.ts";
import type { ClientContext, Emit, StreamStep } from "../../src/kit/codec.ts";
import type * as ir from "../../src/kit/ir.ts";
import { type SseEvent, typedEvent } from "../../src/kit/sse.ts";
import { attachedSignature, encryptedContentOf } from "./carrier.ts";
import {
  callPrefix,
  compactionItem,
  itemId,
  messageItem,
  metaOf,
  outputText,
  reasoningItem,
  type ResponseMeta,
  responseObject,
  terminalOf,
  toolCallItem,
  toolNamespaces,
  urlCitation,
  webSearchCallItem,
} from "./output.ts";

type Out = Emit<SseEvent>;
type StartEvent = Extract<ir.StreamEvent, { type: "part_start" }>;

/** An output item being streamed (one per open IR part). */
interface OpenItem {
  outputIndex: number;
  id: string;
  part: StartEvent["part"];
  /** Text, summary, arguments or input so far. */
  text: string;
  summaryStarted: boolean;
  signature?: ir.Signature;
  /** A text part's citations, sent as annotations when the text is complete. */
  citations?: ir.Citation[];
}

export function encodeStream(ctx: ClientContext): StreamStep<ir.StreamEvent, SseEvent> {
  const encoder = new StreamEncoder(ctx);
  return { transform: (e, out) => encoder.on(e, out) };
}

class StreamEncoder {
  private seq = 0;
  private started?: ResponseMeta;
  /** Finished items by output index: the terminal event's `output`. */
  private readonly output: unknown[] = [];
  private nextOutputIndex = 0;
  /** Open items by IR part index. */
  private readonly open = new Map<number, OpenItem>();
  private usage?: ir.Usage;
  /** A compaction turn's summary text (it streams no items until the end). */
  private summary = "";
  private ended = false;
  private readonly namespaces: Map<string, string>;

  constructor(private readonly ctx: ClientContext) {
    this.namespaces = toolNamespaces(ctx);
  }

  on(e: ir.StreamEvent, out: Out): void | Promise<void> {
    if (this.ended) return;
    switch (e.type) {
      case "start":
        return this.start(e, out);
      case "usage":
        this.usage = e.usage;
        return;
      case "finish":
        return this.finish(e, out);
      case "error":
        this.ended = true;
        return this.emit(out, "error", {
          code: openAiErrorCode(e.kind),
          message: e.message,
          param: null,
        });
      default:
        if (!this.ctx.compaction) return this.content(e, out);
        if (e.type === "text_delta") this.summary += e.text;
    }
  }

  private get meta(): ResponseMeta {
    if (!this.started) throw new Error("IR stream events arrived before its start event");
    return this.started;
  }

  private emit(out: Out, type: string, fields: Record<string, unknown>) {
    const event = { type, sequence_number: this.seq++, ...fields };
    out.enqueue(typedEvent(event));
  }

  private start(e: Extract<ir.StreamEvent, { type: "start" }>, out: Out) {
    this.started = metaOf(this.ctx, e.id, e.created);
    this.usage = e.usage;
    this.emit(out, "response.created", { response: responseObject(this.meta, []) });
    this.emit(out, "response.in_progress", { response: responseObject(this.meta, []) });
  }

  private content(
    e: Exclude<ir.StreamEvent, { type: "start" | "usage" | "finish" | "error" }>,
    out: Out,
  ) {
    if (e.type === "part_start") return this.partStart(e, out);
    const item = this.open.get(e.index);
    if (!item) return;
    switch (e.type) {
      case "text_delta":
        item.text += e.text;
        return this.emit(out, "response.output_text.delta", {
          ...this.ref(item),
          content_index: 0,
          delta: e.text,
          logprobs: [],
        });
      case "thinking_delta":
        if (!item.summaryStarted) this.summaryPart(out, item, "added");
        item.text += e.text;
        return this.emit(out, "response.reasoning_summary_text.delta", {
          ...this.ref(item),
          summary_index: 0,
          delta: e.text,
        });
      case "arguments_delta":
        item.text += e.json;
        return this.emit(out, `${this.callEvent(item)}.delta`, {
          ...this.ref(item),
          delta: e.json,
        });
      case "signature":
        item.signature = e.signature;
        return;
      case "citation":
        (item.citations ??= []).push(e.citation);
        return;
      case "part_stop":
        return this.close(e.index, item, out);
    }
  }

  private ref(item: OpenItem) {
    return { item_id: item.id, output_index: item.outputIndex };
  }

  private callEvent(item: OpenItem) {
    return item.part.type === "tool_call" && item.part.kind === "custom"
      ? "response.custom_tool_call_input"
      : "response.function_call_arguments";
  }

  private summaryPart(out: Out, item: OpenItem, phase: "added" | "done") {
    item.summaryStarted = true;
    this.emit(out, `response.reasoning_summary_part.${phase}`, {
      ...this.ref(item),
      summary_index: 0,
      part: { type: "summary_text", text: phase === "added" ? "" : item.text },
    });
  }

  private partStart(e: StartEvent, out: Out) {
    const outputIndex = this.nextOutputIndex++;
    const { part } = e;
    const prefix = part.type === "text"
      ? "msg"
      : part.type === "tool_call"
      ? callPrefix(part)
      : part.type === "hosted_call"
      ? "ws"
      : "rs";
    const item: OpenItem = {
      outputIndex,
      id: itemId(prefix, this.meta.id, outputIndex),
      part,
      text: "",
      summaryStarted: false,
      signature: part.type === "tool_call" ? part.signature : undefined,
    };
    this.open.set(e.index, item);
    this.emit(out, "response.output_item.added", {
      output_index: outputIndex,
      item: this.item(item),
    });
    if (part.type === "text") {
      this.emit(out, "response.content_part.added", {
        ...this.ref(item),
        content_index: 0,
        part: outputText(""),
      });
    }
    if (part.type === "hosted_call") {
      // The run arrives whole: its progress events follow one another at once.
      for (const phase of ["in_progress", "searching", "completed"]) {
        this.emit(out, `response.web_search_call.${phase}`, this.ref(item));
      }
    }
  }

  /** A text item's annotations (whole-part citations need the complete text). */
  private annotations(item: OpenItem): unknown[] {
    return (item.citations ?? []).map((c) => urlCitation(c, item.text));
  }

  /** The item in its current state (`output_item.added` before any content, or final). */
  private item(item: OpenItem, done = false): unknown {
    const status = done ? "completed" : "in_progress";
    const { part } = item;
    switch (part.type) {
      case "text":
        return messageItem(
          item.id,
          status,
          done ? [outputText(item.text, this.annotations(item))] : [],
        );
      case "hosted_call":
        return webSearchCallItem(item.id, part, done);
      case "thinking":
        return reasoningItem(
          item.id,
          item.text,
          done
            ? encryptedContentOf({ ...part, text: item.text, signature: item.signature })
            : undefined,
        );
      case "redacted_thinking":
        return reasoningItem(item.id, "", done ? encryptedContentOf(part) : undefined);
      case "tool_call":
        return toolCallItem(item.id, part, item.text, status, this.namespaces.get(part.name));
    }
  }

  private close(index: number, item: OpenItem, out: Out) {
    this.open.delete(index);
    const ref = this.ref(item);
    if (item.part.type === "text") {
      this.annotations(item).forEach((annotation, i) =>
        this.emit(out, "response.output_text.annotation.added", {
          ...ref,
          content_index: 0,
          annotation_index: i,
          annotation,
        })
      );
      this.emit(out, "response.output_text.done", {
        ...ref,
        content_index: 0,
        text: item.text,
        logprobs: [],
      });
      this.emit(out, "response.content_part.done", {
        ...ref,
        content_index: 0,
        part: outputText(item.text, this.annotations(item)),
      });
    } else if (item.part.type === "thinking" && item.summaryStarted) {
      this.emit(out, "response.reasoning_summary_text.done", {
        ...ref,
        summary_index: 0,
        text: item.text,
      });
      this.summaryPart(out, item, "done");
    } else if (item.part.type === "tool_call") {
      const done = item.part.kind === "custom"
        ? { input: item.text }
        : { name: item.part.name, arguments: item.text };
      this.emit(out, `${this.callEvent(item)}.done`, { ...ref, ...done });
    }
    this.finishItem(out, item.outputIndex, this.item(item, true));
    if (item.part.type === "text" || item.part.type === "tool_call") {
      this.carry(out, item.signature);
    }
  }

  private finishItem(out: Out, outputIndex: number, item: unknown) {
    this.output[outputIndex] = item;
    this.emit(out, "response.output_item.done", { output_index: outputIndex, item });
  }

  /** A foreign signature on a text or tool call rides in a reasoning item right after it. */
  private carry(out: Out, sig: ir.Signature | undefined) {
    const carrier = attachedSignature(sig);
    if (!carrier) return;
    const outputIndex = this.nextOutputIndex++;
    const id = itemId("rs", this.meta.id, outputIndex);
    this.emit(out, "response.output_item.added", {
      output_index: outputIndex,
      item: reasoningItem(id, ""),
    });
    this.finishItem(out, outputIndex, reasoningItem(id, "", carrier));
  }

  private async finish(e: Extract<ir.StreamEvent, { type: "finish" }>, out: Out) {
    for (const [index, item] of [...this.open]) this.close(index, item, out);
    if (this.ctx.compaction) {
      const outputIndex = this.nextOutputIndex++;
      const item = compactionItem(itemId("cmp", this.meta.id, outputIndex), this.summary);
      this.emit(out, "response.output_item.added", { output_index: outputIndex, item });
      this.finishItem(out, outputIndex, item);
    }
    const end = terminalOf(e.reason);
    this.ended = true;
    const response = responseObject(this.meta, this.output, end, e.usage ?? this.usage);
    // The client may chain on this response as soon as it sees the end: keep it first.
    await this.ctx.onAnswer?.(response);
    this.emit(out, end.event, { response });
  }
}
