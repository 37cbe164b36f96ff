/**
 * Reading a provider's stream: its body a buffer at a time, cut into whole events by the
 * stream's framing (the tail of an event still arriving is held back), scrubbed of provider keys,
 * under the first-byte and idle deadlines. Relayed streams (src/request/stream_stage.ts) forward
 * the batches' bytes; converted ones (src/request/client_stream.ts) decode their events.
 */
import { GatewayError, malformedEvent } from "../kit/errors.ts";
import type { UpstreamFraming } from "../kit/framing.ts";
import type { SseEvent } from "../kit/sse.ts";
import type { Secrets } from "../ops/secrets.ts";
import type { Deadline } from "./deadline.ts";
import { ProviderFailure } from "./failover.ts";
import type { UpstreamResponse } from "./relay.ts";
import { scrubUpstream } from "./upstream_body.ts";
import { ClientGone } from "./stream_end.ts";

/** The buffer sizes an upstream stream is read with. */
const MIN_READ_BYTES = 4 * 1024;
const MAX_READ_BYTES = 64 * 1024;

/** A single upstream event larger than this ends the stream (it would be held in memory). */
const MAX_EVENT_BYTES = 64 * 1024 * 1024;

interface Timeouts {
  first_byte_ms: number;
  idle_ms: number;
}

const encoder = new TextEncoder();

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Complete upstream events and the bytes that carry them (scrubbed if they held a key). */
export interface Batch {
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
  private failure?: Error;
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
    // A framing whose codec loads on first use: awaited until the first chunk, not per batch.
    if (this.first && this.framing.ready) await this.framing.ready;
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
      this.fail(malformedEvent());
      const events = scan.events.slice(0, scan.malformed.at);
      return events.length ? this.scrubbed(events, scan.malformed.before) : undefined;
    }
    if (scan.exception) {
      // The provider's refusal, counted as if it had answered with its status.
      const { status, kind, message } = scan.exception.error;
      this.fail(new ProviderFailure(new GatewayError(status, kind, this.scrub(message))));
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

  /** Text that holds a key (or a provider's exception), scrubbed. */
  private scrub(text: string): string {
    return scrubUpstream(this.up, this.secrets, text);
  }

  /** `events` relayed from their text, scrubbed (a binary framing writes them again). */
  private scrubbed(events: SseEvent[], text: string): Batch {
    const scrub = (t: string) => this.scrub(t);
    const clean = events.map((e) => ({ ...e, data: scrub(e.data) }));
    const { rewrite } = this.framing;
    return { events: clean, bytes: rewrite ? rewrite(clean) : encoder.encode(scrub(text)) };
  }

  /**
   * Ends reading early: the upstream call is abandoned, and `next()` throws the reason (also
   * when an event read fine here cannot be decoded: src/request/client_stream.ts).
   */
  fail(failure: Error) {
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
