/**
 * The one stage a relayed stream passes through on its way from the provider to the client,
 * and the SSE framing streams are cut and written with. Bytes are forwarded as they arrive, but
 * only whole events (src/request/upstream_events.ts holds back the tail of an event still
 * arriving): an interruption ending always starts on a fresh event boundary, and a provider key
 * split across two chunks is still found and scrubbed. Events are parsed only as far as the
 * format's watch needs (end, error, usage, output); everything else is a scan for blank lines.
 */
import type { StreamWatch } from "../kit/codec.ts";
import { GatewayError } from "../kit/errors.ts";
import { ClientGone, clientGone, closeStream } from "./stream_end.ts";
import type { Batch, EventReader } from "./upstream_events.ts";
import { looksWhole, type SseEvent } from "../kit/sse.ts";
import type { Usage } from "../kit/ir.ts";
import type { UpstreamFraming } from "../kit/framing.ts";
import type { UpstreamSpec } from "../kit/format.ts";
import type { Trace } from "../ops/trace.ts";

const LF = 10;
const CR = 13;

/** The offset just past the last blank line in buf[from - 3 ..], or 0 if there is none. */
function lastBlankLine(buf: Uint8Array, from: number): number {
  for (let i = buf.length - 1; i >= Math.max(1, from - 3); i--) {
    const b = buf[i];
    if (b !== LF && b !== CR) continue;
    const p = buf[i - 1];
    // "\n\n", "\r\r", or "\r\n\r\n" (and a lone "\r\n" after "\n").
    if (p === b && b === LF) return i + 1;
    if (p === b && b === CR && buf[i + 1] !== LF) return i + 1;
    if (b === LF && p === CR && (buf[i - 2] === LF || buf[i - 2] === CR)) return i + 1;
  }
  return 0;
}

/** One SSE record's `event:` name and joined `data:` lines. */
function parseRecord(record: string): SseEvent | undefined {
  let event: string | undefined;
  let data: string | undefined;
  for (const line of record.split(/\r\n|\r|\n/)) {
    if (line.startsWith("data:")) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === undefined ? value : `${data}\n${value}`;
    } else if (line.startsWith("event:")) {
      event = line.slice(line.charCodeAt(6) === 32 ? 7 : 6);
    }
  }
  return data === undefined ? undefined : { event, data };
}

/** How a format's streams divide into events: its own framing, else server-sent events. */
export function framingOf(spec: UpstreamSpec, interruption?: (why: string) => string) {
  return spec.framing?.(interruption) ?? sseFraming(interruption);
}

/**
 * Server-sent events, ended (when cut) by `interruption`: the client dialect's whole ending
 * (converted streams, which encode their own ending, need none).
 */
export function sseFraming(interruption: (why: string) => string = () => ""): UpstreamFraming {
  return {
    mediaType: "text/event-stream",
    scan(buf, from, decode) {
      const cut = lastBlankLine(buf, from);
      if (cut === 0) return { cut, events: [] };
      const events: SseEvent[] = [];
      const text = decode(buf.subarray(0, cut));
      // Records and the blank lines between them, alternately.
      const parts = text.split(/(\r\n\r\n|\n\n|\r\r)/);
      let at = 0;
      for (
        let i = 0;
        i < parts.length;
        at += parts[i].length + (parts[i + 1]?.length ?? 0), i += 2
      ) {
        const e = parseRecord(parts[i]);
        if (!e) continue; // comments, keep-alives, the empty string after the last blank line
        if (!looksWhole(e.data)) {
          return { cut, events, malformed: { at: events.length, before: text.slice(0, at) } };
        }
        events.push(e);
      }
      return { cut, events, text };
    },
    complete: () => "",
    interrupted: interruption,
  };
}

/**
 * A relayed stream: the provider's bytes, whole events at a time, scrubbed of provider keys,
 * ending either as the provider ended it or with the framing's interruption ending.
 */
export function relayStream(
  events: Pick<EventReader, "next" | "cancel">,
  framing: UpstreamFraming,
  watch: StreamWatch,
  trace: Trace,
  /** The stream's usage once it ended, given its terminal event (src/request/usage.ts). */
  usage: (end: string | undefined) => Usage | undefined,
): ReadableStream<Uint8Array> {
  let ended = false;
  let end: string | undefined;
  // What the trace knows when the stream stops, however: the usage so far, the output relayed.
  const seen = () => {
    trace.reportUsage(usage(end));
    trace.outputChars = watch.output();
  };
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>, why?: string) => {
    seen();
    const ending = why === undefined ? framing.complete() : framing.interrupted(why);
    return closeStream(controller, trace, ending, why);
  };
  trace.streaming = true;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let batch: Batch | undefined;
      try {
        batch = await events.next();
      } catch (e) {
        if (e instanceof ClientGone) {
          seen();
          return clientGone(trace, controller, e);
        }
        // A failure after the stream's terminal event (a reset after it) lost nothing.
        return finish(controller, ended ? undefined : (e as GatewayError).message);
      }
      if (!batch) {
        return finish(
          controller,
          ended ? undefined : "the upstream closed the stream before its end",
        );
      }
      for (const e of batch.events) {
        if (watch.inspect(e)) {
          ended = true;
          end = e.data;
        }
      }
      trace.firstByte();
      controller.enqueue(batch.bytes);
    },
    cancel(reason) {
      seen();
      clientGone(trace);
      return events.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
