/**
 * The byte level of a stream: how upstream bytes divide into events and how a stream ends.
 * Each format plugin names its framing; the core's stream stage scans with it.
 */
import type { ErrorKind } from "./errors.ts";
import type { SseEvent } from "./sse.ts";

/** An error the upstream sent inside a stream that began as a success (a frame of its own). */
export interface StreamException {
  status: number;
  kind: ErrorKind;
  message: string;
}

/** What a framing found in the bytes received so far. */
export interface Scan {
  /** Offset just past the last complete event. */
  cut: number;
  /** The complete events, parsed far enough for a watch. */
  events: SseEvent[];
  /** The text of the bytes before `cut`, when the scan decoded it anyway. */
  text?: string;
  /**
   * A complete event that is not a JSON payload: `at` is its index, `before` the framing's own
   * text of the events before it (relayed as received, then the stream ends).
   */
  malformed?: { at: number; before: string };
  /**
   * The bytes relayed for the events before `cut` when the framing re-frames them (then `text`
   * is their text); absent: the upstream's own bytes.
   */
  bytes?: Uint8Array;
  /**
   * An error frame: `at` is its index among the events, `text` (and `bytes`) hold the events
   * before it, which are relayed; then the attempt fails with `error` (before any content,
   * failover may try another target).
   */
  exception?: { at: number; error: StreamException };
}

/**
 * What a framing writes to the client: text (encoded as UTF-8), or bytes where its framing is
 * binary (AWS event stream).
 */
export type Written = string | Uint8Array;

/** How a stream's bytes divide into events, and how it ends when cut. */
export interface UpstreamFraming {
  /** The content type of a stream in this framing (a 2xx of another type is refused). */
  mediaType: string;
  /**
   * Settles when the methods below may be called: set by a framing whose codec loads on first
   * use (AWS event stream); the core awaits it before the first scan or write.
   */
  ready?: Promise<void>;
  /** The content type of the relayed bytes when the framing re-frames them. */
  relayedType?: string;
  /** Scans `buf`, of which bytes before `from` were scanned before and held back. */
  scan(buf: Uint8Array, from: number, decode: (b: Uint8Array) => string): Scan;
  /** What closes the client's stream after a complete upstream stream. */
  complete(): Written;
  /** What tells the client the stream was cut short. */
  interrupted(why: string): Written;
  /**
   * A converted client stream's event as this framing writes it (default: a server-sent
   * event); the same framing then ends that stream.
   */
  write?(e: SseEvent): Written;
  /**
   * For a framing whose relayed bytes are not text (AWS event stream): the bytes of `events`,
   * which the core relays in place of a batch it had to scrub of a key or cut short. Its `Scan`
   * then gives `text` (the events as text), where keys are looked for.
   */
  rewrite?(events: SseEvent[]): Uint8Array;
}
