/**
 * Ingress: IR stream events to the Anthropic SSE a client SDK accepts: `message_start`, then
 * one content block at a time with sequential indexes from 0, then `message_delta` and
 * `message_stop` (only on IR `finish`). Every record has its `event:` line.
 */
import { anthropicDialect } from "./dialect.ts";
import type * as ir from "../../src/kit/ir.ts";
import type { ClientContext, StreamStep } from "../../src/kit/codec.ts";
import { carrySignature } from "../../src/kit/signature.ts";
import { type SseEvent, typedEvent } from "../../src/kit/sse.ts";
import { CUSTOM_INPUT_KEY, errorEvent, errorFinish, streamErrorBody } from "../shared.ts";
import {
  attachedSignatureBlocks,
  citationBlock,
  FAMILY,
  messageId,
  type Obj,
  redactedThinkingBlock,
  serverToolBlocks,
  serverToolUsage,
  stopReasonFromIr,
  type Tagged,
  toolUseId,
  usageFromIr,
} from "./common.ts";

type Emit = (data: Tagged) => void;

/** The one client block open at a time. */
interface OpenBlock {
  /** The client block type. */
  type: string;
  /** IR part index it renders. */
  part: number;
  /** Client `index`. */
  index: number;
  /** A thinking block's signature, sent as `signature_delta` just before the block stops. */
  signature?: ir.Signature;
  /** A text/tool part's foreign signature, sent in a carrier block after this one. */
  carrier?: ir.Signature;
  /** Custom tool calls stream raw text inside `{"input": "…"}`. */
  custom?: boolean;
  /** A text block's text so far (a citation quotes its span). */
  text?: string;
}

const CUSTOM_PREFIX = `{"${CUSTOM_INPUT_KEY}":"`;
const CUSTOM_SUFFIX = `"}`;
/** A fragment of a JSON string literal's inside (escapes are per character, so they split). */
const jsonStringFragment = (text: string) => JSON.stringify(text).slice(1, -1);

export function encodeStream(ctx: ClientContext): StreamStep<ir.StreamEvent, SseEvent> {
  let open: OpenBlock | undefined;
  let nextIndex = 0;
  let sawToolCall = false;
  let usage: ir.Usage = { inputTokens: 0, outputTokens: 0 };
  const runs: ir.HostedCallPart[] = [];

  function startBlock(emit: Emit, part: number, contentBlock: Tagged): OpenBlock {
    const index = nextIndex++;
    emit({ type: "content_block_start", index, content_block: contentBlock });
    return { type: contentBlock.type, part, index };
  }

  const delta = (emit: Emit, index: number, d: Obj) =>
    emit({ type: "content_block_delta", index, delta: d });

  function closeBlock(emit: Emit) {
    if (!open) return;
    const { index, signature, carrier, custom } = open;
    if (signature) {
      delta(emit, index, { type: "signature_delta", signature: carrySignature(signature, FAMILY) });
    }
    if (custom) delta(emit, index, { type: "input_json_delta", partial_json: CUSTOM_SUFFIX });
    emit({ type: "content_block_stop", index });
    open = undefined;
    if (carrier) emitCarrier(emit, carrier);
  }

  /** The carrier block of a text/tool part's signature, streamed like any thinking block. */
  function emitCarrier(emit: Emit, sig: ir.Signature) {
    for (const { signature } of attachedSignatureBlocks(sig)) {
      const { index } = startBlock(emit, -1, { type: "thinking", thinking: "", signature: "" });
      delta(emit, index, { type: "signature_delta", signature });
      emit({ type: "content_block_stop", index });
    }
  }

  function startPart(emit: Emit, e: Extract<ir.StreamEvent, { type: "part_start" }>) {
    closeBlock(emit);
    const p = e.part;
    switch (p.type) {
      case "text":
        open = { ...startBlock(emit, e.index, { type: "text", text: "" }), text: "" };
        return;
      case "hosted_call": {
        // A whole run: the server tool's call (its input as one delta), then its result.
        runs.push(p);
        const { use, result } = serverToolBlocks(p);
        const call = startBlock(emit, -1, { ...use, input: {} });
        delta(emit, call.index, {
          type: "input_json_delta",
          partial_json: JSON.stringify(use.input),
        });
        emit({ type: "content_block_stop", index: call.index });
        const done = startBlock(emit, -1, result);
        emit({ type: "content_block_stop", index: done.index });
        return;
      }
      case "thinking":
        open = startBlock(emit, e.index, { type: "thinking", thinking: "", signature: "" });
        return;
      case "redacted_thinking":
        open = startBlock(emit, e.index, redactedThinkingBlock(p.data, p.family));
        return;
      case "tool_call": {
        sawToolCall = true;
        const block = { type: "tool_use", id: toolUseId(p.id), name: p.name, input: {} };
        open = { ...startBlock(emit, e.index, block), carrier: p.signature };
        if (p.kind === "custom") {
          open.custom = true;
          delta(emit, open.index, { type: "input_json_delta", partial_json: CUSTOM_PREFIX });
        }
      }
    }
  }

  /** A thinking block signs itself; text and tool calls need a carrier block after them. */
  function onSignature(block: OpenBlock, sig: ir.Signature) {
    if (block.type === "thinking") block.signature = sig;
    else if (block.type === "text" || block.type === "tool_use") block.carrier = sig;
  }

  function finish(emit: Emit, e: Extract<ir.StreamEvent, { type: "finish" }>) {
    closeBlock(emit);
    const failed = errorFinish(e.reason, sawToolCall);
    if (failed) return error(emit, errorEvent(failed));
    if (e.usage) usage = e.usage;
    emit({
      type: "message_delta",
      delta: {
        stop_reason: stopReasonFromIr(e.reason, e.stopSequence, sawToolCall),
        stop_sequence: e.stopSequence ?? null,
      },
      usage: {
        ...usageFromIr(usage),
        ...(runs.length && { server_tool_use: serverToolUsage(runs) }),
      },
    });
    emit({ type: "message_stop" });
  }

  function error(emit: Emit, e: Extract<ir.StreamEvent, { type: "error" }>) {
    emit(streamErrorBody(anthropicDialect, e) as Tagged);
  }

  return {
    transform(e, controller) {
      const emit: Emit = (data) => controller.enqueue(typedEvent(data));
      const current = open?.part === ("index" in e ? e.index : undefined) ? open : undefined;
      switch (e.type) {
        case "start":
          if (e.usage) usage = e.usage;
          return emit({
            type: "message_start",
            message: {
              id: messageId(e.id),
              type: "message",
              role: "assistant",
              model: ctx.model,
              content: [],
              stop_reason: null,
              stop_sequence: null,
              usage: usageFromIr(usage),
            },
          });
        case "part_start":
          return startPart(emit, e);
        case "text_delta":
          if (!current) return;
          if (current.text !== undefined) current.text += e.text;
          return delta(emit, current.index, { type: "text_delta", text: e.text });
        case "citation":
          if (current?.text === undefined) return; // its block is closed: Anthropic cannot add it
          return delta(emit, current.index, {
            type: "citations_delta",
            citation: citationBlock(e.citation, current.text),
          });
        case "thinking_delta":
          if (current) delta(emit, current.index, { type: "thinking_delta", thinking: e.text });
          return;
        case "arguments_delta":
          if (!current) return;
          return delta(emit, current.index, {
            type: "input_json_delta",
            partial_json: current.custom ? jsonStringFragment(e.json) : e.json,
          });
        case "signature":
          if (current) onSignature(current, e.signature);
          return;
        case "part_stop":
          if (current) closeBlock(emit);
          return;
        case "usage":
          usage = e.usage;
          return;
        case "finish":
          return finish(emit, e);
        case "error":
          return error(emit, e);
      }
    },
  };
}
