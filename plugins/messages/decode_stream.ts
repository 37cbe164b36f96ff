/** Upstream: Anthropic Messages SSE events to IR stream events, one event at a time. */
import type * as ir from "../../src/kit/ir.ts";
import type { DecodeContext, StreamStep } from "../../src/kit/codec.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { eventObject, jsonObjectOf } from "../shared.ts";
import {
  applyServerResult,
  citationOf,
  errorFromType,
  FAMILY,
  finishFromStopReason,
  isServerResult,
  type Obj,
  serverRun,
  stopPart,
  usageToIr,
  type WireUsage,
} from "./common.ts";

type Emit = (e: ir.StreamEvent) => void;

/** An open upstream block, by its upstream `index`. */
interface Block {
  /** The IR part index (-1: a block with no part of its own, e.g. a server tool's). */
  index: number;
  /** Custom tool calls collect their `{"input": …}` JSON to unwrap it at the stop. */
  customJson?: string;
  /** A `server_tool_use` block: its input JSON is collected; the run waits for its result. */
  server?: { id: string; name: string; json: string };
  /** A text block: where it starts in its IR part, and its citations (sent at its stop). */
  text?: { start: number; citations: ir.Citation[] };
}

export function decodeStream(ctx: DecodeContext): StreamStep<SseEvent, ir.StreamEvent> {
  const blocks = new Map<number, Block>();
  /** Server tool runs waiting for their result block, by `server_tool_use` id. */
  const runs = new Map<string, ir.HostedCallPart>();
  let nextIndex = 0;
  /**
   * The IR text part text blocks go to. Anthropic splits an answer with citations into many
   * text blocks; a run of text blocks is one IR part (one Responses message), so the part's
   * stop waits (`held`) until something else starts.
   */
  let textRun: { index: number; length: number; held: boolean } | undefined;
  const release = (emit: Emit) => {
    if (textRun?.held) emit({ type: "part_stop", index: textRun.index });
    textRun = undefined;
  };
  let sawToolCall = false;
  let usage: WireUsage = {};
  let stop: { reason: unknown; sequence: unknown } = { reason: null, sequence: null };

  /** A text block opens an IR text part, or continues the one just before it. */
  function textBlock(upstreamIndex: number, block: Obj, emit: Emit) {
    if (!textRun?.held) {
      release(emit);
      textRun = { index: nextIndex++, length: 0, held: false };
      emit({ type: "part_start", index: textRun.index, part: { type: "text" } });
    }
    textRun.held = false;
    const text = { start: textRun.length, citations: [] as ir.Citation[] };
    for (const c of Array.isArray(block.citations) ? block.citations as Obj[] : []) {
      const citation = citationOf(c);
      if (citation) text.citations.push(citation);
    }
    blocks.set(upstreamIndex, { index: textRun.index, text });
    if (block.text) {
      textRun.length += String(block.text).length;
      emit({ type: "text_delta", index: textRun.index, text: String(block.text) });
    }
  }

  const handlers: Record<string, (data: Obj, emit: Emit) => void> = {
    message_start(data, emit) {
      const message = (data.message ?? {}) as Obj;
      usage = { ...(message.usage as WireUsage | undefined) };
      emit({
        type: "start",
        id: typeof message.id === "string" ? message.id : ctx.id,
        model: typeof message.model === "string" ? message.model : "",
        created: ctx.now,
        usage: usageToIr(usage),
      });
    },
    content_block_start(data, emit) {
      const block = (data.content_block ?? {}) as Obj;
      if (block.type === "text") return textBlock(Number(data.index), block, emit);
      release(emit);
      if (block.type === "server_tool_use") {
        // The input streams as input_json_delta (the start shows `{}`).
        const server = { id: String(block.id), name: String(block.name), json: "" };
        return void blocks.set(Number(data.index), { index: -1, server });
      }
      if (isServerResult(block.type)) {
        // The run is complete now: one whole IR part, opened and closed at once.
        const run = runs.get(String(block.tool_use_id));
        if (!run) return;
        runs.delete(run.id);
        applyServerResult(run, block);
        const index = nextIndex++;
        emit({ type: "part_start", index, part: run });
        emit({ type: "part_stop", index });
        return;
      }
      const index = nextIndex;
      const opened = startPart(block, index, ctx, emit);
      if (!opened) return; // server-tool blocks: never requested by the gateway
      nextIndex++;
      if (block.type === "tool_use") sawToolCall = true;
      blocks.set(Number(data.index), opened);
    },
    content_block_delta(data, emit) {
      const block = blocks.get(Number(data.index));
      const delta = (data.delta ?? {}) as Obj;
      if (block?.text && delta.type === "citations_delta") {
        const citation = citationOf((delta.citation ?? {}) as Obj);
        if (citation) block.text.citations.push(citation);
        return;
      }
      if (block?.text && textRun && delta.type === "text_delta") {
        textRun.length += String(delta.text ?? "").length;
      }
      if (block) emitDelta(block, delta, emit);
    },
    content_block_stop(data, emit) {
      const block = blocks.get(Number(data.index));
      if (!block) return;
      blocks.delete(Number(data.index));
      if (block.server) {
        const { id, name, json } = block.server;
        const run = serverRun(id, name, jsonObjectOf(json || "{}") ?? {});
        if (run) runs.set(id, run);
        return;
      }
      if (block.text && textRun) {
        // The block's span is known now: its citations cite exactly that span.
        const span = { start: block.text.start, end: textRun.length };
        for (const c of block.text.citations) {
          emit({ type: "citation", index: block.index, citation: { ...c, ...span } });
        }
        textRun.held = true;
        return;
      }
      stopPart(block, emit);
    },
    message_delta(data) {
      const delta = (data.delta ?? {}) as Obj;
      stop = { reason: delta.stop_reason, sequence: delta.stop_sequence };
      // Cumulative: later values replace earlier ones, absent ones keep theirs.
      for (const [key, value] of Object.entries((data.usage ?? {}) as Obj)) {
        if (value !== null && value !== undefined) (usage as Obj)[key] = value;
      }
    },
    message_stop(_data, emit) {
      release(emit);
      const finish: ir.StreamEvent = {
        type: "finish",
        reason: sawToolCall ? "tool_calls" : finishFromStopReason(stop.reason),
        usage: usageToIr(usage),
      };
      if (typeof stop.sequence === "string") finish.stopSequence = stop.sequence;
      emit(finish);
    },
    error(data, emit) {
      const error = (data.error ?? {}) as Obj;
      const { status, kind } = errorFromType(error.type);
      emit({ type: "error", status, kind, message: String(error.message ?? "") });
    },
  };

  return {
    transform(event, controller) {
      const data = eventObject(event.data); // throws for an event that is not a JSON object
      if (!data) return;
      const type = String(data.type ?? event.event);
      // Unknown event types (and `ping`) are ignored, as Anthropic asks of clients.
      handlers[type]?.(data, (e) => controller.enqueue(e));
    },
  };
}

function startPart(block: Obj, index: number, ctx: DecodeContext, emit: Emit): Block | undefined {
  switch (block.type) {
    case "thinking":
      emit({ type: "part_start", index, part: { type: "thinking" } });
      if (block.thinking) emit({ type: "thinking_delta", index, text: String(block.thinking) });
      if (block.signature) emitSignature(index, String(block.signature), emit);
      return { index };
    case "redacted_thinking":
      emit({
        type: "part_start",
        index,
        part: { type: "redacted_thinking", data: String(block.data ?? ""), family: FAMILY },
      });
      return { index };
    case "tool_use": {
      const name = String(block.name);
      const custom = ctx.customTools?.includes(name);
      const kind = custom ? "custom" as const : undefined;
      emit({
        type: "part_start",
        index,
        part: { type: "tool_call", id: String(block.id), name, ...(kind ? { kind } : {}) },
      });
      // The start block carries `input: {}`; the arguments arrive as input_json_delta.
      return custom ? { index, customJson: "" } : { index };
    }
  }
}

const emitSignature = (index: number, value: string, emit: Emit) =>
  emit({ type: "signature", index, signature: { family: FAMILY, value } });

function emitDelta(block: Block, delta: Obj, emit: Emit) {
  const index = block.index;
  switch (delta.type) {
    case "text_delta":
      return emit({ type: "text_delta", index, text: String(delta.text ?? "") });
    case "thinking_delta":
      return emit({ type: "thinking_delta", index, text: String(delta.thinking ?? "") });
    case "signature_delta":
      return emitSignature(index, String(delta.signature ?? ""), emit);
    case "input_json_delta": {
      const json = String(delta.partial_json ?? "");
      if (block.server) block.server.json += json;
      else if (block.customJson !== undefined) block.customJson += json;
      else if (json) emit({ type: "arguments_delta", index, json });
      return;
    }
  }
}
