/** Structured logs: one JSON line per request or reload on stdout. Never a key or a prompt. */
import type { AccessRecord } from "./context.ts";
import type { Secrets } from "./secrets.ts";

type Sink = (line: string) => void;

let sink: Sink = (line) => console.log(line);

/** Redirects access lines (tests capture them; `GATEWAY_ACCESS_LOG=off` silences them). */
export function setAccessLogSink(next: Sink): Sink {
  const previous = sink;
  sink = next;
  return previous;
}

/** Writes one access line; its error text may have come from upstream, so it is scrubbed. */
export function logAccess(record: AccessRecord, secrets: Secrets): void {
  sink(secrets.scrub(JSON.stringify({ time: new Date().toISOString(), msg: "access", ...record })));
}

/** Writes one line about the gateway itself (a reload) among the access lines, scrubbed. */
export function logEvent(event: Record<string, unknown>, secrets: Secrets): void {
  sink(secrets.scrub(JSON.stringify({ time: new Date().toISOString(), ...event })));
}
