/**
 * The one stage a relayed stream passes through on its way from the provider to the client.
 * Bytes are forwarded as they arrive, but only whole events: the tail of an event that is still
 * arriving is held back until its end. That way an interruption ending always starts on a fresh
 * event boundary, and a provider key split across two chunks is still found and scrubbed.
 * Events are parsed only as far as the format's watch needs (end, error, usage); everything
 * else is a scan for blank lines.
 */
import type { StreamWatch } from "../kit/codec.ts";
import type { Deadline } from "./deadline.ts";
import { GatewayError } from "../kit/errors.ts";
import type { UpstreamResponse } from "./relay.ts";
import { ClientGone, clientGone, closeStream } from "./stream_end.ts";
import type { Secrets } from "../ops/secrets.ts";
import type { SseEvent } from "../kit/sse.ts";
import type { UpstreamFraming } from "../kit/framing.ts";
import type { UpstreamSpec } from "../kit/format.ts";
import type { Trace } from "../ops/trace.ts";
import { ProviderFailure } from "./failover.ts";

/** The buffer sizes an upstream stream is read with. */
const MIN_READ_BYTES = 4 * 1024;
const MAX_READ_BYTES = 64 * 1024;

/** A single upstream event larger than this ends the stream (it would be held in memory). */
const MAX_EVENT_BYTES = 64 * 1024 * 1024;

interface Timeouts {
  first_byte_ms: number;
  idle_ms: number;
}

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

/**
 * A JSON payload, judged by its first and last characters (a bracketed end marker such as
 * chat's passes as an array).
 */
function looksWhole(data: string): boolean {
  const t = data.trim();
  const first = t[0];
  const last = t[t.length - 1];
  return (first === "{" && last === "}") || (first === "[" && last === "]");
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

const encoder = new TextEncoder();

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Complete upstream events and the bytes that carry them (scrubbed if they held a key). */
interface Batch {
  events: SseEvent[];
  bytes: Uint8Array;
}

/**
 * Reads an upstream stream body whole events at a time, under the first-byte and idle
 * deadline. `next()` resolves to the next batch, or undefined at the upstream's end; it throws
 * `ClientGone` when the client left, and a GatewayError when the upstream failed, timed out or
 * sent a malformed or oversized event (after returning the good events before it).
 */
export class EventReader {
  /**
   * A BYOB reader: an idle stream then holds a small buffer of ours rather than the 64 KiB one
   * Deno's default read allocates for every pending read (most of a slow stream's memory).
   */
  private readonly reader: ReadableStreamBYOBReader;
  private readSize = MIN_READ_BYTES;
  private readonly decoder = new TextDecoder();
  private readonly decode = (b: Uint8Array) => this.decoder.decode(b);
  private readonly deadline: Deadline;
  private held?: Uint8Array;
  private first = true;
  private failure?: GatewayError;
  private done = false;

  constructor(
    private readonly up: UpstreamResponse,
    private readonly timeouts: Timeouts,
    private readonly framing: UpstreamFraming,
    private readonly secrets: Secrets,
  ) {
    this.reader = up.res.body!.getReader({ mode: "byob" });
    this.deadline = up.deadline;
    this.deadline.arm(timeouts.first_byte_ms, "sent no data");
  }

  async next(): Promise<Batch | undefined> {
    if (this.failure) throw this.failure;
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await this.reader.read(new Uint8Array(this.readSize));
      } catch (e) {
        this.close();
        if (e instanceof ClientGone || e instanceof GatewayError) throw e;
        throw new GatewayError(502, "upstream", "the upstream connection failed mid-stream");
      }
      if (chunk.done) {
        this.close();
        return undefined;
      }
      // A full buffer means more is waiting: read bigger next time (and smaller when it is not).
      this.readSize = chunk.value.byteLength === this.readSize
        ? Math.min(this.readSize * 2, MAX_READ_BYTES)
        : MIN_READ_BYTES;
      if (this.first) {
        this.first = false;
        this.deadline.arm(this.timeouts.idle_ms, "went idle");
      } else this.deadline.touch();
      const from = this.held?.length ?? 0;
      const batch = this.take(this.held ? concat(this.held, chunk.value) : chunk.value, from);
      if (this.held && this.held.length > MAX_EVENT_BYTES) {
        this.fail(
          new GatewayError(502, "upstream", `an upstream event exceeded ${MAX_EVENT_BYTES} bytes`),
        );
      }
      if (batch) return batch;
      if (this.failure) throw this.failure;
    }
  }

  /** The complete events of `buf` (undefined if none); holds back the incomplete tail. */
  private take(buf: Uint8Array, from: number): Batch | undefined {
    const scan = this.framing.scan(buf, from, this.decode);
    this.held = scan.cut === 0 ? buf : scan.cut < buf.length ? buf.slice(scan.cut) : undefined;
    if (scan.cut === 0) return undefined;
    if (scan.malformed) {
      this.fail(new GatewayError(502, "upstream", "the upstream sent a malformed event"));
      const events = scan.events.slice(0, scan.malformed.at);
      return events.length ? this.scrubbed(events, scan.malformed.before) : undefined;
    }
    if (scan.exception) {
      // The provider's refusal, counted as if it had answered with its status.
      const { status, kind, message } = scan.exception.error;
      this.fail(new ProviderFailure(new GatewayError(status, kind, this.secrets.scrub(message))));
      const events = scan.events.slice(0, scan.exception.at);
      return events.length ? this.scrubbed(events, scan.text ?? "") : undefined;
    }
    // The held tail was copied out, so the complete part can go out without a copy.
    const bytes = scan.bytes ?? (scan.cut === buf.length ? buf : buf.subarray(0, scan.cut));
    if (this.secrets.longest === 0) return { events: scan.events, bytes };
    // Every byte is looked at, not only the events' data: `id:`, `event:`, `retry:` and comment
    // lines, unknown fields, and whatever else lies between events are relayed too.
    const text = scan.text ?? this.decode(bytes);
    // Scrubbing re-encodes; everything else goes out as the provider's own bytes.
    return this.secrets.found(text)
      ? this.scrubbed(scan.events, text)
      : { events: scan.events, bytes };
  }

  /** `events` relayed from their text, scrubbed (a binary framing writes them again). */
  private scrubbed(events: SseEvent[], text: string): Batch {
    const scrub = (t: string) => this.secrets.scrub(t);
    const clean = events.map((e) => ({ ...e, data: scrub(e.data) }));
    const { rewrite } = this.framing;
    return { events: clean, bytes: rewrite ? rewrite(clean) : encoder.encode(scrub(text)) };
  }

  /** Ends reading early: the upstream call is abandoned, and `next()` throws the reason. */
  private fail(failure: GatewayError) {
    this.failure = failure;
    this.up.abort(this.failure);
    this.reader.cancel().catch(() => {});
    this.close();
  }

  private close() {
    if (this.done) return;
    this.done = true;
    this.up.release();
  }

  /** The client left: abort the upstream call. */
  cancel(reason: unknown): Promise<void> {
    this.close();
    this.up.abort(new ClientGone(String(reason)));
    return this.reader.cancel(reason).catch(() => {});
  }
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
): ReadableStream<Uint8Array> {
  let ended = false;
  // What the trace knows when the stream stops, however: the usage so far, the output relayed.
  const seen = () => {
    trace.reportUsage(watch.usage());
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
      for (const e of batch.events) if (watch.inspect(e)) ended = true;
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
