/**
 * Upstream: ConverseStream events (framing.ts names each by its `:event-type`, or its
 * `:exception-type` for exceptions) to IR stream events. An exception is an IR error, so the
 * client hears Bedrock's kind in its own dialect (a rate limit, not a bare interruption), and an
 * error before content fails the attempt over (src/request/hold_opening.ts). Text and reasoning blocks have no
 * start event in Converse: their first delta opens them.
 */
import type * as ir from "../../src/kit/ir.ts";
import type { DecodeContext, StreamStep } from "../../src/kit/codec.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { eventObject, jsonObjectOf } from "../shared.ts";
import { stopPart } from "../messages/common.ts";
import { bedrockException } from "../platforms/bedrock_wire.ts";
import { FAMILY, finishFromStopReason, isObj, type Obj } from "./common.ts";
import { usageOf } from "./response.ts";

type Emit = (e: ir.StreamEvent) => void;

/** An exception frame of a type Bedrock added later: a failure of the upstream all the same. */
const UNKNOWN_EXCEPTION = { status: 500, kind: "upstream" as const };

/** An open upstream block, by its `contentBlockIndex`. */
interface Block {
  /** The IR part index. */
  index: number;
  type: "text" | "thinking" | "redacted_thinking" | "tool_call";
  /** Custom tool calls collect their `{"input": …}` JSON to unwrap it at the stop. */
  customJson?: string;
}

export function decodeStream(ctx: DecodeContext): StreamStep<SseEvent, ir.StreamEvent> {
  const blocks = new Map<number, Block>();
  let nextIndex = 0;
  let sawToolCall = false;
  let stopReason: unknown;

  function open(at: number, part: ir.StreamEvent & { type: "part_start" }, emit: Emit): Block {
    emit(part);
    const block: Block = { index: part.index, type: part.part.type as Block["type"] };
    blocks.set(at, block);
    return block;
  }

  /** The block a delta belongs to, opened by the delta when it is a text or reasoning block. */
  function blockFor(at: number, delta: Obj, emit: Emit): Block | undefined {
    const known = blocks.get(at);
    if (known) return known;
    const index = nextIndex++;
    if (typeof delta.text === "string") {
      return open(at, { type: "part_start", index, part: { type: "text" } }, emit);
    }
    const reasoning = isObj(delta.reasoningContent) ? delta.reasoningContent : undefined;
    if (typeof reasoning?.redactedContent === "string") {
      const part = {
        type: "redacted_thinking" as const,
        data: reasoning.redactedContent,
        family: FAMILY,
      };
      return open(at, { type: "part_start", index, part }, emit);
    }
    if (reasoning) return open(at, { type: "part_start", index, part: { type: "thinking" } }, emit);
    nextIndex--; // a delta of a kind the IR has no part for (citations, images)
    return undefined;
  }

  const handlers: Record<string, (data: Obj, emit: Emit) => void> = {
    messageStart(_data, emit) {
      // Converse names neither the response nor the model in its stream.
      emit({ type: "start", id: ctx.id, model: "", created: ctx.now });
    },
    contentBlockStart(data, emit) {
      const start = isObj(data.start) ? data.start : {};
      if (!isObj(start.toolUse)) return;
      const name = String(start.toolUse.name ?? "");
      const custom = ctx.customTools?.includes(name);
      const part = {
        type: "tool_call" as const,
        id: String(start.toolUse.toolUseId ?? ""),
        name,
        ...(custom ? { kind: "custom" as const } : {}),
      };
      sawToolCall = true;
      const block = open(Number(data.contentBlockIndex), {
        type: "part_start",
        index: nextIndex++,
        part,
      }, emit);
      if (custom) block.customJson = "";
    },
    contentBlockDelta(data, emit) {
      const delta = isObj(data.delta) ? data.delta : {};
      const block = blockFor(Number(data.contentBlockIndex), delta, emit);
      if (block) emitDelta(block, delta, emit);
    },
    contentBlockStop(data, emit) {
      const at = Number(data.contentBlockIndex);
      const block = blocks.get(at);
      if (!block) return;
      blocks.delete(at);
      stopPart(block, emit);
    },
    messageStop(data) {
      stopReason = data.stopReason;
    },
    // Usage comes last, after messageStop: the stream's real end.
    metadata(data, emit) {
      const finish: ir.StreamEvent = {
        type: "finish",
        reason: sawToolCall ? "tool_calls" : finishFromStopReason(stopReason),
      };
      const usage = usageOf(data);
      if (usage) finish.usage = usage;
      emit(finish);
    },
  };

  return {
    transform(event, controller) {
      const emit = (e: ir.StreamEvent) => controller.enqueue(e);
      const name = event.event ?? "";
      const exception = bedrockException(name) ??
        (name.endsWith("Exception") ? UNKNOWN_EXCEPTION : undefined);
      if (exception) {
        const data = jsonObjectOf(event.data) ?? {};
        const message = String(data.message ?? data.Message ?? name);
        return emit({ type: "error", ...exception, message });
      }
      // An event whose payload is not a JSON object throws; types added later are ignored, as
      // the AWS SDKs do.
      const data = eventObject(event.data);
      if (data) handlers[name]?.(data, emit);
    },
  };
}

function emitDelta(block: Block, delta: Obj, emit: Emit) {
  const index = block.index;
  if (block.type === "text" && typeof delta.text === "string") {
    return emit({ type: "text_delta", index, text: delta.text });
  }
  if (block.type === "tool_call" && isObj(delta.toolUse)) {
    const json = String(delta.toolUse.input ?? "");
    if (block.customJson !== undefined) block.customJson += json;
    else if (json) emit({ type: "arguments_delta", index, json });
    return;
  }
  const reasoning = isObj(delta.reasoningContent) ? delta.reasoningContent : {};
  if (block.type !== "thinking") return;
  if (typeof reasoning.text === "string") {
    emit({ type: "thinking_delta", index, text: reasoning.text });
  }
  if (typeof reasoning.signature === "string") {
    emit({ type: "signature", index, signature: { family: FAMILY, value: reasoning.signature } });
  }
}
