/**
 * Ingress: IR stream events to ConverseStream's events, as the AWS SDKs read them (framing.ts
 * writes each as an event-stream frame named by its `event`): `messageStart`, then per block
 * `contentBlockStart` (tool calls only: text and reasoning open with their first delta, as
 * Bedrock streams them), `contentBlockDelta`s and `contentBlockStop`, then `messageStop` and
 * `metadata` with the usage. An error is the exception Bedrock streams for its kind.
 */
import type * as ir from "../../src/kit/ir.ts";
import type { ClientContext, StreamStep } from "../../src/kit/codec.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { toolUseId } from "../messages/common.ts";
import { exceptionOf, streamExceptionName } from "../platforms/bedrock_wire.ts";
import { carrySignature } from "../../src/kit/signature.ts";
import { FAMILY, type Obj, stopReasonFromIr, usageFromIr } from "./common.ts";
import { attachedSignature, redactedContent } from "./response.ts";

type Emit = (event: string, data: Obj) => void;

/** An open IR part: the Converse block index it streams as, and what closes it. */
interface Open {
  block: number;
  /** Reasoning, whose signature streams in its own block. */
  reasoning: boolean;
  /** A text or tool call's signature (Gemini's), sent as a block of its own after it. */
  carrier?: ir.Signature;
}

export function encodeStream(_ctx: ClientContext): StreamStep<ir.StreamEvent, SseEvent> {
  const open = new Map<number, Open>();
  let nextBlock = 0;
  let sawToolCall = false;
  let usage: ir.Usage | undefined;

  const delta = (emit: Emit, block: number, d: Obj) =>
    emit("contentBlockDelta", { contentBlockIndex: block, delta: d });

  /** A whole reasoning block (a carried signature, redacted reasoning) at the next index. */
  function reasoningBlock(emit: Emit, content: Obj) {
    const block = nextBlock++;
    delta(emit, block, { reasoningContent: content });
    emit("contentBlockStop", { contentBlockIndex: block });
  }

  return {
    transform(e, controller) {
      const emit: Emit = (event, data) => controller.enqueue({ event, data: JSON.stringify(data) });
      switch (e.type) {
        case "start":
          if (e.usage) usage = e.usage;
          return emit("messageStart", { role: "assistant" });
        case "part_start": {
          const { part } = e;
          if (part.type === "hosted_call") return; // no Converse block for another vendor's run
          if (part.type === "redacted_thinking") {
            return reasoningBlock(emit, {
              redactedContent: redactedContent(part.data, part.family),
            });
          }
          const block = nextBlock++;
          const carrier = part.type === "tool_call" ? part.signature : undefined;
          open.set(e.index, { block, reasoning: part.type === "thinking", carrier });
          if (part.type !== "tool_call") return;
          sawToolCall = true;
          return emit("contentBlockStart", {
            contentBlockIndex: block,
            start: { toolUse: { toolUseId: toolUseId(part.id), name: part.name } },
          });
        }
        case "text_delta": {
          const o = open.get(e.index);
          if (o && e.text) delta(emit, o.block, { text: e.text });
          return;
        }
        case "thinking_delta": {
          const o = open.get(e.index);
          if (o && e.text) delta(emit, o.block, { reasoningContent: { text: e.text } });
          return;
        }
        case "signature": {
          const o = open.get(e.index);
          if (!o) return;
          // A text part's signature (Gemini's) has no slot: it follows the part.
          if (!o.reasoning) o.carrier = e.signature;
          else {
            const signature = carrySignature(e.signature, FAMILY);
            delta(emit, o.block, { reasoningContent: { signature } });
          }
          return;
        }
        case "arguments_delta": {
          const o = open.get(e.index);
          if (o && e.json) delta(emit, o.block, { toolUse: { input: e.json } });
          return;
        }
        case "part_stop": {
          const o = open.get(e.index);
          if (!o) return;
          open.delete(e.index);
          emit("contentBlockStop", { contentBlockIndex: o.block });
          const signature = attachedSignature(o.carrier);
          if (signature) reasoningBlock(emit, { signature });
          return;
        }
        case "usage":
          usage = e.usage;
          return;
        case "finish": {
          const stopReason = stopReasonFromIr(e.reason, e.stopSequence, sawToolCall);
          emit("messageStop", { stopReason });
          return emit("metadata", {
            usage: usageFromIr(e.usage ?? usage ?? { inputTokens: 0, outputTokens: 0 }),
          });
        }
        case "error":
          return emit(streamExceptionName(exceptionOf(e.kind)), { message: e.message });
      }
    },
  };
}
