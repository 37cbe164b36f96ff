/** Streams in both directions: Gemini SSE chunks ⇄ IR stream events. */
import { googleDialect } from "./dialect.ts";
import type * as ir from "../../src/kit/ir.ts";
import type { ClientContext, DecodeContext, StreamStep } from "../../src/kit/codec.ts";
import { dataEvent, type SseEvent } from "../../src/kit/sse.ts";
import { eventObject, streamErrorBody } from "../shared.ts";
import { ChunkDecoder } from "./chunks.ts";
import { clientChunk, clientPart } from "./response.ts";
import { GroundingBuilder } from "./grounding.ts";

// ---- upstream ----

export function decodeStream(ctx: DecodeContext): StreamStep<SseEvent, ir.StreamEvent> {
  const decoder = new ChunkDecoder(ctx);
  return {
    transform(e, out) {
      // A cut-off stream is the core's to report; an event that is not a chunk object throws.
      const chunk = eventObject(e.data);
      if (chunk) { for (const event of decoder.decode(chunk)) out.enqueue(event); }
    },
  };
}

// ---- ingress ----

/** A tool call being collected: Gemini clients get each call whole. */
interface PendingCall {
  part: Pick<ir.ToolCallPart, "id" | "name" | "kind" | "signature">;
  json: string;
}

/**
 * One chunk per IR event that has something to show: text and thoughts as they arrive, each
 * function call whole at its stop, and a last chunk with `finishReason` and `usageMetadata`.
 * Every chunk is one complete JSON document, so the core can frame them as SSE or as the
 * JSON-array stream.
 */
export function encodeStream(ctx: ClientContext): StreamStep<ir.StreamEvent, SseEvent> {
  let responseId = "";
  let usage: ir.Usage | undefined;
  const grounding = new GroundingBuilder();
  const kinds = new Map<number, "text" | "thinking">();
  const calls = new Map<number, PendingCall>();
  const part = (p: ir.Part): SseEvent[] => {
    const encoded = clientPart(p);
    return encoded ? [dataEvent(clientChunk(ctx, responseId, [encoded]))] : [];
  };

  const encode = (e: ir.StreamEvent): SseEvent[] => {
    switch (e.type) {
      case "start":
        responseId = e.id;
        usage = e.usage;
        return [];
      case "part_start":
        if (e.part.type === "tool_call") calls.set(e.index, { part: e.part, json: "" });
        else if (e.part.type === "redacted_thinking") return part(e.part);
        else if (e.part.type === "hosted_call") grounding.call(e.part);
        else kinds.set(e.index, e.part.type);
        return [];
      case "text_delta":
        grounding.text.add(e.index, e.text);
        return part({ type: "text", text: e.text });
      case "citation":
        grounding.citation(e.index, e.citation);
        return [];
      case "thinking_delta":
        return part({ type: "thinking", text: e.text });
      case "arguments_delta": {
        const call = calls.get(e.index);
        if (call) call.json += e.json;
        return [];
      }
      case "signature": {
        const call = calls.get(e.index);
        if (call) {
          call.part = { ...call.part, signature: e.signature };
          return [];
        }
        // Gemini sends a late signature on an empty fragment of the same kind.
        const type = kinds.get(e.index) ?? "text";
        return part({ type, text: "", signature: e.signature });
      }
      case "part_stop": {
        kinds.delete(e.index);
        const call = calls.get(e.index);
        if (!call) return [];
        calls.delete(e.index);
        return part({ type: "tool_call", ...call.part, arguments: call.json });
      }
      case "usage":
        usage = e.usage;
        return [];
      case "finish":
        return [
          dataEvent(
            clientChunk(ctx, responseId, [], {
              reason: e.reason,
              usage: e.usage ?? usage,
              grounding,
            }),
          ),
        ];
      case "error":
        return [dataEvent(streamErrorBody(googleDialect, e))];
    }
  };

  return {
    transform(e, out) {
      for (const event of encode(e)) out.enqueue(event);
    },
  };
}
