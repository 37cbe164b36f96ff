/**
 * InvokeModelWithResponseStream as its clients read it: each Anthropic stream event in a
 * `chunk` frame (base64 JSON), `message_stop` carrying `amazon-bedrock-invocationMetrics`, an
 * error as an exception frame. A Messages provider's server-sent events are re-framed so; a
 * Bedrock provider's own frames pass as they came (plugins/platforms/bedrock_wire.ts).
 */
import type { ErrorKind } from "../../src/kit/errors.ts";
import type { UpstreamFraming } from "../../src/kit/framing.ts";
import type { StreamFraming } from "../../src/kit/generation.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { joinBytes } from "../../src/kit/http.ts";
import { readUsage } from "../messages/common.ts";
import { watch } from "../messages/watch.ts";
import {
  chunkFrame,
  exceptionOf,
  METRICS_KEY,
  streamExceptionName,
} from "../platforms/bedrock_wire.ts";
import { EVENT_STREAM_TYPE, jsonFrame, loadEventStreams } from "../platforms/event_stream.ts";
import { jsonObjectOf } from "../shared.ts";

/** Anthropic's in-stream error types as the kinds whose exceptions Bedrock streams instead. */
const KIND_OF_TYPE: Record<string, ErrorKind> = {
  overloaded_error: "overloaded",
  rate_limit_error: "rate_limit",
  invalid_request_error: "invalid_request",
  timeout_error: "timeout",
  upstream_interrupted: "upstream_interrupted",
};

/** An exception frame (`ThrottlingException` as `throttlingException`) with its message. */
const exceptionFrame = (name: string, message: string) =>
  jsonFrame("exception", streamExceptionName(name), JSON.stringify({ message }));

/** An Anthropic `error` event as the exception frame Bedrock would have sent. */
function errorFrame(data: string): Uint8Array {
  const error = jsonObjectOf(data)?.error as { type?: unknown; message?: unknown } | undefined;
  const type = typeof error?.type === "string" ? error.type : "";
  const message = typeof error?.message === "string" ? error.message : "the model stream failed";
  return exceptionFrame(exceptionOf(KIND_OF_TYPE[type] ?? "upstream"), message);
}

/**
 * Bedrock's own counts on `message_stop`, where the stream's provider was not Bedrock (whose
 * events carry them already): the tokens the events reported, the invocation's latency and the
 * time to its first event, in milliseconds.
 */
class InvocationMetrics {
  private readonly opened = Date.now();
  private firstEvent?: number;
  private readonly usage = watch();

  /** `e` as it goes out: seen for its counts, or `message_stop` with them. */
  see(e: SseEvent): string {
    this.firstEvent ??= Date.now();
    this.usage.inspect(e);
    if (e.event !== "message_stop" || e.data.includes(METRICS_KEY)) return e.data;
    const stop = jsonObjectOf(e.data) ?? { type: "message_stop" };
    const json = this.usage.usageEvents().map(jsonObjectOf).filter((o) => o !== undefined);
    const u = readUsage({ json });
    const cached = (u?.cacheReadTokens ?? 0) + (u?.cacheWriteTokens ?? 0);
    return JSON.stringify({
      ...stop,
      [METRICS_KEY]: {
        inputTokenCount: (u?.inputTokens ?? 0) - cached,
        outputTokenCount: u?.outputTokens ?? 0,
        invocationLatency: Date.now() - this.opened,
        firstByteLatency: this.firstEvent - this.opened,
        ...(u?.cacheReadTokens !== undefined && { cacheReadInputTokenCount: u.cacheReadTokens }),
        ...(u?.cacheWriteTokens !== undefined && { cacheWriteInputTokenCount: u.cacheWriteTokens }),
      },
    });
  }
}

/**
 * One client stream's framing. Relayed from a Messages provider it scans that provider's own
 * framing (`upstream`) and writes each event as a frame; converted, it writes the events the
 * messages codec made.
 */
function invokeFraming(upstream?: UpstreamFraming): UpstreamFraming {
  const metrics = new InvocationMetrics();
  const frame = (e: SseEvent) =>
    e.event === "error" ? errorFrame(e.data) : chunkFrame(metrics.see(e));
  const frames = (events: SseEvent[]) => joinBytes(events.map(frame));
  return {
    mediaType: upstream?.mediaType ?? "text/event-stream",
    relayedType: EVENT_STREAM_TYPE,
    ready: loadEventStreams(),
    scan(buf, from, decode) {
      const scan = upstream!.scan(buf, from, decode);
      // Cut short, the core writes the events before the cut (`rewrite`).
      if (scan.malformed || scan.exception) return scan;
      // Only events go out: comments and keep-alives have no frame.
      const text = scan.text ?? decode(buf.subarray(0, scan.cut));
      return { ...scan, text, bytes: frames(scan.events) };
    },
    write: frame,
    rewrite: frames,
    complete: () => "",
    interrupted: (why) => exceptionFrame(exceptionOf("upstream_interrupted"), why),
  };
}

export const INVOKE_STREAM: StreamFraming = {
  contentType: EVENT_STREAM_TYPE,
  open: invokeFraming,
};
