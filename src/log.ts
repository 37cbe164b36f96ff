/** Structured logs: one JSON line per request on stdout. Never a key or a prompt. */
import type { Secrets } from "./secrets.ts";
import type { Observer, Trace } from "./trace.ts";

type Sink = (line: string) => void;

let sink: Sink = (line) => console.log(line);

/** Redirects access lines (tests capture them; `GATEWAY_ACCESS_LOG=off` silences them). */
export function setAccessLogSink(next: Sink): Sink {
  const previous = sink;
  sink = next;
  return previous;
}

/** The access-log line of a finished request. */
function line(t: Trace) {
  return {
    time: new Date().toISOString(),
    msg: "access",
    request_id: t.requestId,
    client_ip: t.clientIp,
    key: t.key,
    method: t.method,
    endpoint: t.endpoint,
    path: t.path,
    model: t.model,
    route: t.route,
    provider: t.provider,
    passthrough: t.mode === undefined ? undefined : t.mode === "relay",
    status: t.status,
    duration_ms: t.durationMs,
    ttfb_ms: t.ttfbMs,
    attempts: t.attempts || undefined,
    usage: t.usage,
    interrupted: t.interrupted || undefined,
    error: t.error,
    dropped: t.dropped,
    stored: t.stored,
  };
}

/** The access log as an observer: one line when a request ends, scrubbed of provider keys. */
export function accessLog(secrets: Secrets): Observer {
  return { ended: (t) => sink(secrets.scrub(JSON.stringify(line(t)))) };
}
