/**
 * Newline-delimited JSON, the toy's stream framing in both directions: one JSON object per
 * line, no SSE records. A cut stream ends with the interruption line on a line of its own.
 */
import type { StreamFraming } from "../../src/kit/generation.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import type { Scan, UpstreamFraming } from "../../src/kit/framing.ts";

const NDJSON_TYPE = "application/x-ndjson";

const LF = 10;

/** The toy's own interruption line (its dialect's, too). */
export function interruptionLine(message: string): string {
  return JSON.stringify({ fault: { kind: "upstream_interrupted", text: message } }) + "\n";
}

/**
 * Scans whole lines; the tail after the last LF is held back by the core until it completes
 * (so the interruption never lands inside a half-sent line). Blank lines are keep-alives.
 */
export function ndjsonFraming(interruption: (why: string) => string): UpstreamFraming {
  return {
    mediaType: NDJSON_TYPE,
    scan(buf: Uint8Array, from: number, decode: (b: Uint8Array) => string): Scan {
      // Bytes before `from` were held back, so they hold no LF: search only the new ones.
      const last = buf.lastIndexOf(LF);
      if (last < from) return { cut: 0, events: [] };
      const cut = last + 1;
      const events: SseEvent[] = [];
      const text = decode(buf.subarray(0, cut));
      let at = 0;
      for (const line of text.split("\n")) {
        const data = line.trim();
        // A line that is not a JSON object ends the stream; the lines before it go out as sent.
        if (data && !(data.startsWith("{") && data.endsWith("}"))) {
          return { cut, events, malformed: { at: events.length, before: text.slice(0, at) } };
        }
        if (data) events.push({ data });
        at += line.length + 1;
      }
      return { cut, events };
    },
    write: (e: SseEvent) => e.data + "\n",
    complete: () => "",
    interrupted: interruption,
  };
}

/** The client side: converted streams are serialized and ended as NDJSON too. */
export const NDJSON: StreamFraming = {
  contentType: NDJSON_TYPE,
  open: () => ndjsonFraming(interruptionLine),
};
