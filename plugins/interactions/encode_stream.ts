/**
 * IR stream events as the Interactions SSE stream (2026-05-20 event names): the lifecycle
 * (`interaction.created`, `interaction.status_update`, `interaction.completed`), one step per
 * IR part (`step.start`, `step.delta`…, `step.stop`), and `error`. A step's `index` is its
 * position among the interaction's steps, which differs from the IR index where a signature
 * becomes a step of its own or a hosted run two.
 */
import type * as ir from "../../src/kit/ir.ts";
import type { ClientContext, StreamStep } from "../../src/kit/codec.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { streamErrorBody } from "../shared.ts";
import { carried, interactionResource, resourceHead } from "./encode_response.ts";
import { AnswerCollector } from "./collect.ts";
import { annotation, encodeUsage, functionCallStep, modelSteps, statusOf } from "./steps.ts";
import { googleDialect } from "../generate-content/dialect.ts";

type Obj = Record<string, unknown>;

/** One event: `event:` repeats `event_type` (as Responses streams do), `data:` is the object. */
export const interactionEvent = (eventType: string, fields: Obj): SseEvent => ({
  event: eventType,
  data: JSON.stringify({ event_type: eventType, ...fields }),
});

/**
 * The `error` event of an IR stream error. Its `error.code` is a string: the interruption
 * carries `upstream_interrupted`, other errors Google's status name (`UNAVAILABLE`).
 */
export function errorEvent(e: Extract<ir.StreamEvent, { type: "error" }>): SseEvent {
  const google = (streamErrorBody(googleDialect, e) as { error: { status: string } }).error;
  const code = e.kind === "upstream_interrupted" ? e.kind : google.status;
  return interactionEvent("error", { error: { code, message: e.message } });
}

interface OpenStep {
  step: number;
  /** Only a `thought` step holds a signature of its own. */
  thought: boolean;
  /** A text step's text so far (citations are placed by UTF-8 offsets into it). */
  text?: string;
  /**
   * The signature of a text part, or of a tool call that got it late (after its step began):
   * sent as a thought step once the step stops.
   */
  signature?: string;
}

export function encodeStream(ctx: ClientContext): StreamStep<ir.StreamEvent, SseEvent> {
  let id = "";
  let created = 0;
  let usage: ir.Usage | undefined;
  let steps = 0;
  const open = new Map<number, OpenStep>();

  /** A step sent whole: start (with its content), then stop. */
  const whole = (step: Obj): SseEvent[] => {
    const index = steps++;
    return [
      interactionEvent("step.start", { index, step }),
      interactionEvent("step.stop", { index }),
    ];
  };
  const start = (irIndex: number, step: Obj, text?: string): SseEvent => {
    const index = steps++;
    open.set(irIndex, {
      step: index,
      thought: step.type === "thought",
      ...(text !== undefined && { text }),
    });
    return interactionEvent("step.start", { index, step });
  };
  const delta = (irIndex: number, delta: Obj): SseEvent[] => {
    const o = open.get(irIndex);
    return o ? [interactionEvent("step.delta", { index: o.step, delta })] : [];
  };

  const encode = (e: ir.StreamEvent): SseEvent[] => {
    switch (e.type) {
      case "start": {
        id = ctx.id ?? e.id;
        created = e.created;
        usage = e.usage;
        const { updated: _, ...head } = resourceHead(id, ctx, created, "in_progress");
        return [
          interactionEvent("interaction.created", {
            interaction: { ...head, object: "interaction" },
          }),
          interactionEvent("interaction.status_update", {
            interaction_id: id,
            status: "in_progress",
          }),
        ];
      }
      case "part_start":
        return partStart(e.index, e.part);
      case "text_delta": {
        const o = open.get(e.index);
        if (o?.text !== undefined) o.text += e.text;
        return delta(e.index, { type: "text", text: e.text });
      }
      case "citation": {
        const text = open.get(e.index)?.text ?? "";
        return delta(e.index, {
          type: "text_annotation_delta",
          annotations: [annotation(e.citation, text)],
        });
      }
      case "thinking_delta":
        return delta(e.index, { type: "thought_summary", content: { type: "text", text: e.text } });
      case "signature": {
        const o = open.get(e.index);
        const signature = carried(e.signature)!;
        if (o?.thought) return delta(e.index, { type: "thought_signature", signature });
        if (o) o.signature = signature;
        return [];
      }
      case "arguments_delta":
        return delta(e.index, { type: "arguments_delta", arguments: e.json });
      case "part_stop": {
        const o = open.get(e.index);
        if (!o) return [];
        open.delete(e.index);
        const stop = interactionEvent("step.stop", { index: o.step });
        return o.signature === undefined
          ? [stop]
          : [stop, ...whole({ type: "thought", signature: o.signature })];
      }
      case "usage":
        usage = e.usage;
        return [];
      case "finish": {
        const final = e.usage ?? usage;
        const interaction = {
          ...resourceHead(id, ctx, created, statusOf(e.reason)),
          object: "interaction",
          ...(final && { usage: encodeUsage(final) }),
        };
        return [interactionEvent("interaction.completed", { interaction })];
      }
      case "error":
        return [errorEvent(e)];
    }
  };

  const partStart = (
    irIndex: number,
    part: Extract<ir.StreamEvent, { type: "part_start" }>["part"],
  ): SseEvent[] => {
    switch (part.type) {
      case "text":
        return [start(irIndex, { type: "model_output", content: [] }, "")];
      case "thinking":
        return [start(irIndex, { type: "thought" })];
      case "redacted_thinking":
      case "hosted_call":
        // Complete when they appear: their steps go out whole.
        return modelSteps(part, carried).flatMap(whole);
      case "tool_call": {
        const sig = carried(part.signature);
        const signed = sig === undefined ? [] : whole({ type: "thought", signature: sig });
        return [...signed, start(irIndex, functionCallStep({ ...part, arguments: "" }))];
      }
    }
  };

  // A kept interaction is gathered as it streams and stored before its end goes out.
  const collector = ctx.onAnswer && new AnswerCollector();
  return {
    transform(e, out) {
      const whole = collector?.see(e);
      const events = encode(e);
      const send = () => events.forEach((event) => out.enqueue(event));
      if (!whole) return send();
      // The client may chain on this interaction as soon as it sees the end: keep it first.
      return Promise.resolve(ctx.onAnswer!(interactionResource(whole, ctx))).then(send);
    },
  };
}
