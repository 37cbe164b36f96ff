/** Upstream: Anthropic Messages SSE events to IR stream events, one event at a time. */
import type * as ir from "../../src/ir.ts";
import type { DecodeContext } from "../../src/codec.ts";
import type { SseEvent } from "../../src/sse.ts";
import { jsonObjectOf } from "../shared.ts";
import {
  errorFromType,
  FAMILY,
  finishFromStopReason,
  type Obj,
  unwrapCustomInput,
  usageToIr,
  type WireUsage,
} from "./common.ts";

type Emit = (e: ir.StreamEvent) => void;

/** An open upstream block, by its upstream `index`. */
interface Block {
  /** The IR part index. */
  index: number;
  /** Custom tool calls collect their `{"input": …}` JSON to unwrap it at the stop. */
  customJson?: string;
}

export function decodeStream(ctx: DecodeContext): TransformStream<SseEvent, ir.StreamEvent> {
  const blocks = new Map<number, Block>();
  let nextIndex = 0;
  let sawToolCall = false;
  let usage: WireUsage = {};
  let stop: { reason: unknown; sequence: unknown } = { reason: null, sequence: null };

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
      const index = nextIndex;
      const opened = startPart(block, index, ctx, emit);
      if (!opened) return; // server-tool blocks: never requested by the gateway
      nextIndex++;
      if (block.type === "tool_use") sawToolCall = true;
      blocks.set(Number(data.index), opened);
    },
    content_block_delta(data, emit) {
      const block = blocks.get(Number(data.index));
      if (block) emitDelta(block, (data.delta ?? {}) as Obj, emit);
    },
    content_block_stop(data, emit) {
      const block = blocks.get(Number(data.index));
      if (!block) return;
      blocks.delete(Number(data.index));
      if (block.customJson !== undefined) {
        emit({
          type: "arguments_delta",
          index: block.index,
          json: unwrapCustomInput(block.customJson),
        });
      }
      emit({ type: "part_stop", index: block.index });
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
      emit({ type: "error", status, errorType: kind, message: String(error.message ?? "") });
    },
  };

  return new TransformStream({
    transform(event, controller) {
      const data = jsonObjectOf(event.data);
      if (!data) return; // a keep-alive comment or garbage: nothing to translate
      const type = String(data.type ?? event.event);
      // Unknown event types (and `ping`) are ignored, as Anthropic asks of clients.
      handlers[type]?.(data, (e) => controller.enqueue(e));
    },
  });
}

function startPart(block: Obj, index: number, ctx: DecodeContext, emit: Emit): Block | undefined {
  switch (block.type) {
    case "text":
      emit({ type: "part_start", index, part: { type: "text" } });
      if (block.text) emit({ type: "text_delta", index, text: String(block.text) });
      return { index };
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
      if (block.customJson !== undefined) block.customJson += json;
      else if (json) emit({ type: "arguments_delta", index, json });
      return;
    }
      // citations_delta: citations have no IR slot.
  }
}
