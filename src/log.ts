/** Structured logs: one JSON line per request on stdout. Never a key or a prompt. */
import type { AccessRecord } from "./context.ts";

type Sink = (line: string) => void;

let sink: Sink = (line) => console.log(line);

/** Redirects access lines (tests capture them; `GATEWAY_ACCESS_LOG=off` silences them). */
export function setAccessLogSink(next: Sink): Sink {
  const previous = sink;
  sink = next;
  return previous;
}

export function logAccess(record: AccessRecord): void {
  sink(JSON.stringify({ time: new Date().toISOString(), msg: "access", ...record }));
}
