/** Structured logs: one JSON line per request or reload on stdout. Never a key or a prompt. */
import { clip } from "../kit/model_name.ts";
import type { Secrets } from "./secrets.ts";
import type { Observer, Trace } from "./trace.ts";

type Sink = (line: string) => void;

/** The sink of `GATEWAY_ACCESS_LOG=off`: no line is even built. */
export const NO_LOG: Sink = () => {};

let sink: Sink = (line) => console.log(line);

/** The gateway thread writing (`workers: N`), named in its lines; a lone gateway names none. */
let worker: number | undefined;

export function setLogWorker(index: number): void {
  worker = index;
}

/** Redirects access lines (tests capture them; `GATEWAY_ACCESS_LOG=off` silences them). */
export function setAccessLogSink(next: Sink): Sink {
  const previous = sink;
  sink = next;
  return previous;
}

/**
 * The token breakdown, flat so a log pipeline can bill from the line alone: input includes
 * the cache reads and writes, output the reasoning (as in `gateway_tokens_total`).
 */
function tokens(t: Trace) {
  const u = t.usage;
  if (!u) return {};
  return {
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cache_read_tokens: u.cacheReadTokens ?? 0,
    cache_write_tokens: u.cacheWriteTokens ?? 0,
    reasoning_tokens: u.reasoningTokens ?? 0,
  };
}

/** The longest path an access line quotes. */
const MAX_PATH_CHARS = 1024;

/** The access-log line of a finished request. */
function line(t: Trace) {
  return {
    time: new Date().toISOString(),
    msg: "access",
    worker,
    request_id: t.requestId,
    client_ip: t.clientIp,
    identity: t.key,
    key: t.consumer ? undefined : t.key,
    session_id: t.sessionId,
    agent_id: t.agentId,
    method: t.method,
    endpoint: t.endpoint,
    // A path may carry a model name (Gemini's) the route lookup never bounded.
    path: clip(t.path, MAX_PATH_CHARS),
    model: t.model,
    route: t.route,
    provider: t.provider,
    provider_key: t.providerKey,
    passthrough: t.mode === undefined ? undefined : t.mode === "relay",
    status: t.status,
    duration_ms: t.durationMs,
    ttfb_ms: t.ttfbMs,
    attempts: t.attempts || undefined,
    hops: t.hops || undefined,
    usage: t.usage,
    billable: t.usage ? t.billable : undefined,
    ...tokens(t),
    interrupted: t.interrupted || undefined,
    usage_estimated: t.estimated || undefined,
    error: t.error,
    dropped: t.dropped,
    stored: t.stored,
  };
}

/**
 * Line and paragraph separators and bidirectional controls: JSON leaves them raw, but a log
 * viewer may break a line at them or show its text reordered, as a raw CR or LF would.
 */
const DECEPTIVE = /[\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16)}`;

/** One JSON log line: scrubbed of provider keys, with nothing that could fake a line break. */
function logLine(record: Record<string, unknown>, secrets: Secrets): string {
  return secrets.scrub(JSON.stringify(record)).replace(DECEPTIVE, escaped);
}

/** The access log as an observer: one line when a request ends, scrubbed of provider keys. */
export function accessLog(secrets: Secrets): Observer {
  return {
    ended(t) {
      if (sink !== NO_LOG) sink(logLine(line(t), secrets));
    },
  };
}

/** Writes one line about the gateway itself (a reload) among the access lines, scrubbed. */
export function logEvent(event: Record<string, unknown>, secrets: Secrets): void {
  sink(logLine({ time: new Date().toISOString(), worker, ...event }, secrets));
}
