/**
 * The one stage a converted (or locally answered) stream passes through on its way to the
 * client. Each batch of whole upstream events is decoded to IR, watched (the real end, usage),
 * encoded into the client's format and serialized — all synchronously, by the codecs'
 * `StreamStep`s — and goes out as one chunk. No stream per step: a step costs a function call.
 */
import type { IrSource, StreamStep } from "../kit/codec.ts";
import { GatewayError } from "../kit/errors.ts";
import type * as ir from "../kit/ir.ts";
import type { UpstreamFraming, Written } from "../kit/framing.ts";
import { ClientGone, clientGone, closeStream, encodeWritten } from "./stream_end.ts";
import { joinBytes } from "../kit/http.ts";
import { formatSse, type SseEvent } from "../kit/sse.ts";
import type { EventReader } from "./upstream_events.ts";
import type { Trace } from "../ops/trace.ts";

/**
 * A provider's stream, decoded by the target codec as its events arrive; `billed` (a platform
 * that reports usage, src/request/usage.ts) puts the platform's counts on the events that carry
 * usage. An event the decoder cannot read (it throws: `malformedEvent`) ends the stream as the
 * reader's own failures do: the events before it go out, the upstream call is abandoned, and the
 * next batch throws — the client gets its format's interruption ending, never a silent end.
 */
export function upstreamIr(
  reader: EventReader,
  decoder: StreamStep<SseEvent, ir.StreamEvent>,
  billed?: (data: string, e: ir.StreamEvent) => ir.StreamEvent,
): IrSource {
  return {
    async next() {
      const batch = await reader.next();
      if (!batch) return undefined;
      const out: ir.StreamEvent[] = [];
      const emit = { enqueue: (e: ir.StreamEvent) => out.push(e) };
      try {
        for (const e of batch.events) {
          const from = out.length;
          const held = decoder.transform(e, emit);
          if (held) await held;
          if (billed) { for (let i = from; i < out.length; i++) out[i] = billed(e.data, out[i]); }
        }
      } catch (e) {
        reader.fail(e as Error);
        if (out.length === 0) throw e;
      }
      return out;
    },
    cancel: (reason) => reader.cancel(reason),
  };
}

/** Events made here (the demo provider, a warm-up answer), all at once. */
export function localIr(events: ir.StreamEvent[]): IrSource {
  let given = false;
  return {
    next() {
      const batch = given ? undefined : events;
      given = true;
      return Promise.resolve(batch);
    },
    cancel: () => Promise.resolve(),
  };
}

/**
 * Watches IR events for the stream's real end (`finish`, or an upstream `error`), usage and the
 * output they carry.
 */
export class IrWatch {
  ended = false;
  /** What the opening reported (Anthropic's input count), told if nothing later is. */
  private opening?: ir.Usage;

  constructor(private readonly trace: Trace) {}

  see(e: ir.StreamEvent): void {
    switch (e.type) {
      case "text_delta":
      case "thinking_delta":
        this.trace.outputChars += e.text.length;
        return;
      case "arguments_delta":
        this.trace.outputChars += e.json.length;
        return;
      case "start":
        this.opening = e.usage;
        return;
      case "finish":
      case "error":
        this.ended = true;
    }
    if (e.type === "usage" || e.type === "finish") this.trace.reportUsage(e.usage);
  }

  /** The stream stopped, however: a cut one's usage is what its opening said, if nothing later. */
  stopped(): void {
    if (!this.trace.usage) this.trace.reportUsage(this.opening);
  }
}

/** Why a source failed, as the interruption says it (the client's leaving is not one). */
export function failureMessage(e: unknown): string {
  return e instanceof GatewayError ? e.message : `upstream stream failed: ${e}`;
}

/**
 * What a stream's framing wrote since the last chunk went out: text (SSE, JSON arrays), or the
 * bytes of a binary framing (AWS event stream), joined into one chunk.
 */
class Pending {
  private text = "";
  /** Bytes of a binary framing; none for a text framing. */
  private bytes?: Uint8Array[];

  add(w: Written): void {
    if (typeof w === "string") this.text += w;
    else (this.bytes ??= []).push(w);
  }

  get empty(): boolean {
    return this.text === "" && this.bytes === undefined;
  }

  /** What was written, as one chunk; empties it. */
  take(): Uint8Array {
    const { text, bytes } = this;
    this.text = "";
    this.bytes = undefined;
    if (!bytes) return encodeWritten(text);
    if (text) bytes.push(encodeWritten(text));
    return joinBytes(bytes);
  }
}

/**
 * A converted stream for an HTTP client: `encode` makes the client's events, `framing` writes
 * them and ends the stream, normally or — if the upstream stopped before its end — with the
 * interruption ending.
 */
export function clientStream(
  source: IrSource,
  encode: StreamStep<ir.StreamEvent, SseEvent>,
  framing: UpstreamFraming,
  trace: Trace,
): ReadableStream<Uint8Array> {
  const watch = new IrWatch(trace);
  const write = framing.write ?? formatSse;
  const pending = new Pending();
  const emit = { enqueue: (e: SseEvent) => pending.add(write(e)) };
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>, why?: string) => {
    watch.stopped();
    return closeStream(
      controller,
      trace,
      why === undefined ? framing.complete() : framing.interrupted(why),
      why,
    );
  };
  trace.streaming = true;
  return new ReadableStream<Uint8Array>({
    start: () => framing.ready,
    async pull(controller) {
      // Loop until something can go out: a batch may hold only events with nothing to show.
      while (pending.empty) {
        let batch: ir.StreamEvent[] | undefined;
        try {
          batch = await source.next();
        } catch (e) {
          if (e instanceof ClientGone) {
            watch.stopped();
            return clientGone(trace, controller, e);
          }
          // A failure after the end (e.g. a reset after the last event) lost nothing.
          return finish(controller, watch.ended ? undefined : failureMessage(e));
        }
        if (!batch) {
          return finish(
            controller,
            watch.ended ? undefined : "the upstream closed the stream before its end",
          );
        }
        for (const e of batch) {
          watch.see(e);
          const held = encode.transform(e, emit);
          if (held) await held;
        }
      }
      trace.firstByte();
      controller.enqueue(pending.take());
    },
    cancel(reason) {
      watch.stopped();
      clientGone(trace);
      return source.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
