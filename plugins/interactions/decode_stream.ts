/**
 * An Interactions provider's SSE stream to IR stream events. Steps map to IR parts one to one,
 * except where the format has no part boundary of its own:
 * - a `thought` step opens a thinking part only once it has summary text; a summary-less one
 *   holds a signature, which goes to the tool call that follows (or becomes thinking);
 * - a hosted run (call step, then result step) is one IR part, sent whole at its result.
 */
import type * as ir from "../../src/kit/ir.ts";
import type { DecodeContext, StreamStep } from "../../src/kit/codec.ts";
import type { ErrorKind } from "../../src/kit/errors.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { readSignature } from "../../src/kit/signature.ts";
import { eventObject } from "../shared.ts";
import { charOffset } from "../hosted.ts";
import { continuationOf, decodeUsage, FAMILY, finishOf, unixTime } from "./steps.ts";

type Obj = Record<string, unknown>;
type Out = ir.StreamEvent[];

/** Google status names of an `error` event's `code`, as HTTP status and error kind. */
const ERROR_CODES: Record<string, [number, ErrorKind]> = {
  INVALID_ARGUMENT: [400, "invalid_request"],
  RESOURCE_EXHAUSTED: [429, "rate_limit"],
  UNAVAILABLE: [503, "overloaded"],
  DEADLINE_EXCEEDED: [504, "timeout"],
  upstream_interrupted: [502, "upstream_interrupted"],
};

interface OpenPart {
  index: number;
  kind: "text" | "thinking" | "tool_call";
  /** Text so far (annotation offsets are UTF-8 bytes into it). */
  text: string;
}

/** A thought step not yet shown: it has no summary text so far. */
interface PendingThought {
  step: number;
  signature?: ir.Signature;
}

export function decodeStream(ctx: DecodeContext): StreamStep<SseEvent, ir.StreamEvent> {
  let next = 0;
  let sawCall = false;
  let usage: ir.Usage | undefined;
  let finished = false;
  const open = new Map<number, OpenPart>();
  let pending: PendingThought | undefined;
  /** A summary-less thought's signature, waiting for the step after it. */
  let held: ir.Signature | undefined;
  const hosted = new Map<string, ir.HostedCallPart>();

  const openPart = (step: number, kind: OpenPart["kind"]): number => {
    const index = next++;
    open.set(step, { index, kind, text: "" });
    return index;
  };

  /** A held signature that no tool call claimed becomes an empty, signed thinking part. */
  const release = (): Out => {
    if (!held) return [];
    const signature = held;
    held = undefined;
    const index = next++;
    return [
      { type: "part_start", index, part: { type: "thinking" } },
      { type: "signature", index, signature },
      { type: "part_stop", index },
    ];
  };

  /** Shows a pending thought as a thinking part, once it has text. */
  const showThought = (p: PendingThought): Out => {
    pending = undefined;
    const index = openPart(p.step, "thinking");
    return [
      { type: "part_start", index, part: { type: "thinking" } },
      ...(p.signature ? [{ type: "signature" as const, index, signature: p.signature }] : []),
    ];
  };

  const stepStart = (stepIndex: number, step: Obj): Out => {
    const signature = held;
    const out: Out = step.type === "function_call" ? [] : release();
    switch (step.type) {
      case "model_output": {
        const index = openPart(stepIndex, "text");
        out.push({ type: "part_start", index, part: { type: "text" } });
        for (const c of (step.content ?? []) as Obj[]) out.push(...textDelta(stepIndex, c));
        break;
      }
      case "thought": {
        const sig = typeof step.signature === "string"
          ? readSignature(step.signature, FAMILY)
          : undefined;
        const p: PendingThought = { step: stepIndex, ...(sig && { signature: sig }) };
        const summary = ((step.summary ?? []) as Obj[]).map((c) => String(c.text ?? "")).join("");
        if (summary) {
          out.push(...showThought(p), { type: "thinking_delta", index: next - 1, text: summary });
        } else pending = p;
        break;
      }
      case "function_call": {
        held = undefined;
        sawCall = true;
        const index = openPart(stepIndex, "tool_call");
        const part = {
          type: "tool_call" as const,
          id: String(step.id),
          name: String(step.name),
          ...(signature && { signature }),
        };
        out.push({ type: "part_start", index, part });
        const args = step.arguments as Obj | undefined;
        if (args && Object.keys(args).length) {
          out.push({ type: "arguments_delta", index, json: JSON.stringify(args) });
        }
        break;
      }
      case "google_search_call":
      case "url_context_call": {
        const args = (step.arguments ?? {}) as { queries?: string[]; urls?: string[] };
        const id = String(step.id);
        hosted.set(
          id,
          step.type === "url_context_call"
            ? { type: "hosted_call", id, kind: "web_fetch", url: args.urls?.[0] }
            : { type: "hosted_call", id, kind: "web_search", queries: args.queries },
        );
        break;
      }
      case "google_search_result":
      case "url_context_result": {
        const call = hosted.get(String(step.call_id));
        if (!call) break;
        hosted.delete(call.id);
        if (step.is_error === true) call.error = "error";
        const index = next++;
        out.push({ type: "part_start", index, part: call }, { type: "part_stop", index });
        break;
      }
    }
    return out;
  };

  const textDelta = (stepIndex: number, c: Obj): Out => {
    const o = open.get(stepIndex);
    if (!o) return [];
    if (c.type === "text" && typeof c.text === "string" && c.text) {
      o.text += c.text;
      return [{ type: "text_delta", index: o.index, text: c.text }];
    }
    if (c.type === "text_annotation_delta" && Array.isArray(c.annotations)) {
      return (c.annotations as Obj[]).flatMap((a): Out => {
        if (a.type !== "url_citation" || typeof a.url !== "string") return [];
        const citation: ir.Citation = {
          url: a.url,
          ...(typeof a.title === "string" && { title: a.title }),
          ...(typeof a.start_index === "number" && { start: charOffset(o.text, a.start_index) }),
          ...(typeof a.end_index === "number" && { end: charOffset(o.text, a.end_index) }),
        };
        return [{ type: "citation", index: o.index, citation }];
      });
    }
    return [];
  };

  const stepDelta = (stepIndex: number, delta: Obj): Out => {
    if (pending?.step === stepIndex) {
      if (delta.type === "thought_signature" && typeof delta.signature === "string") {
        pending.signature = readSignature(delta.signature, FAMILY);
        return [];
      }
      const text = String((delta.content as Obj | undefined)?.text ?? "");
      if (delta.type !== "thought_summary" || !text) return [];
      const out = showThought(pending);
      return [...out, { type: "thinking_delta", index: next - 1, text }];
    }
    const o = open.get(stepIndex);
    if (!o) return [];
    switch (delta.type) {
      case "thought_summary": {
        const text = String((delta.content as Obj | undefined)?.text ?? "");
        return text ? [{ type: "thinking_delta", index: o.index, text }] : [];
      }
      case "thought_signature":
        return typeof delta.signature === "string"
          ? [{
            type: "signature",
            index: o.index,
            signature: readSignature(delta.signature, FAMILY),
          }]
          : [];
      case "arguments_delta":
        return typeof delta.arguments === "string" && delta.arguments
          ? [{ type: "arguments_delta", index: o.index, json: delta.arguments }]
          : [];
      default:
        return textDelta(stepIndex, delta);
    }
  };

  const stepStop = (stepIndex: number): Out => {
    if (pending?.step === stepIndex) {
      held = pending.signature;
      pending = undefined;
      return [];
    }
    const o = open.get(stepIndex);
    if (!o) return [];
    open.delete(stepIndex);
    return [{ type: "part_stop", index: o.index }];
  };

  const decode = (e: Obj): Out => {
    switch (e.event_type) {
      case "interaction.created": {
        const i = (e.interaction ?? {}) as Obj;
        return [{
          type: "start",
          id: typeof i.id === "string" ? i.id : ctx.id,
          model: typeof i.model === "string" ? i.model : "",
          created: unixTime(i.created, ctx.now),
        }];
      }
      case "step.start":
        return stepStart(Number(e.index), (e.step ?? {}) as Obj);
      case "step.delta":
        return stepDelta(Number(e.index), (e.delta ?? {}) as Obj);
      case "step.stop":
        return stepStop(Number(e.index));
      case "interaction.completed": {
        finished = true;
        const i = (e.interaction ?? {}) as Obj;
        usage = decodeUsage(i.usage) ?? usage;
        const reason = finishOf(i.status, sawCall);
        return [
          ...release(),
          { type: "finish", reason, ...(usage && { usage }), ...continuationOf(i) },
        ];
      }
      case "error": {
        finished = true;
        const err = (e.error ?? {}) as Obj;
        const [status, kind] = ERROR_CODES[String(err.code)] ?? [500, "upstream"];
        const message = typeof err.message === "string" ? err.message : "upstream error";
        return [{ type: "error", status, kind, message }];
      }
      default:
        return [];
    }
  };

  return {
    transform(e, out) {
      // A cut stream is the core's to report; an event that is not a JSON object throws.
      const event = finished ? undefined : eventObject(e.data);
      if (event) { for (const ir of decode(event)) out.enqueue(ir); }
    },
  };
}
