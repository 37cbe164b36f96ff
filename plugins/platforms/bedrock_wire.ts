/**
 * What Bedrock Runtime sends back, read for the core: its errors (named by `x-amzn-errortype`
 * or `__type`, with a `{"message"}` body) and exception frames as neutral kinds, and its
 * InvokeModel streams (AWS event-stream `chunk` frames, each holding one event of the format
 * in base64) re-framed as the format's SSE, the events' JSON byte for byte.
 */
import { badRequest, type ErrorKind, GatewayError } from "../../src/kit/errors.ts";
import { checkModelName, decodePathSegment } from "../../src/kit/http.ts";
import type { StreamException, UpstreamFraming } from "../../src/kit/framing.ts";
import type { Usage } from "../../src/kit/ir.ts";
import type { PlatformError } from "../../src/kit/platform.ts";
import type { UsageSource } from "../../src/kit/usage.ts";
import { formatSse, type SseEvent } from "../../src/kit/sse.ts";
import {
  cutFrames,
  EVENT_STREAM_TYPE,
  type EventStreamFrame,
  jsonFrame,
  loadEventStreams,
} from "./event_stream.ts";

/**
 * Why a model id cannot be the `/model/{id}/…` path segment. Ids with `:` and ARNs (with `/`)
 * are encoded whole, as Bedrock takes them; only an empty or dot segment would be resolved
 * into another path.
 */
function unsafeModelId(model: string): string | undefined {
  if (model === "") return "it is empty";
  if (model === "." || model === "..") return "it is a dot segment";
}

/** Why a route may not rename to `model` (a provider's `unsafeModel`). */
export function unsafeModelName(model: string): string | undefined {
  const why = unsafeModelId(model);
  return why && `cannot be sent in a Bedrock URL: ${why}`;
}

/** A model id as its one percent-encoded path segment, or a 400 naming the model. */
export function modelIdSegment(model: string): string {
  const why = unsafeModelId(model);
  if (why) {
    throw badRequest(
      `model: ${JSON.stringify(model)} cannot be sent in the upstream URL: ${why}`,
      "model",
    );
  }
  return encodeURIComponent(model);
}

const MODEL_PATH = /^\/model\/(.+)\/([a-z-]+)$/;

/**
 * `/model/{modelId}/{operation}` for one of `operations`; the model id may hold `/` (an ARN
 * sent raw), so it is everything up to the last segment.
 */
export const modelPattern = (...operations: string[]) =>
  new RegExp(`^/model/.+/(?:${operations.join("|")})$`);

/**
 * The model id and operation of a Bedrock Runtime path (`/model/{modelId}/invoke`), the way
 * back of `modelIdSegment`: percent-encoded (the AWS SDKs) or raw (Claude Code sends `:` as is;
 * an ARN's `/` may come either way).
 */
export function readModelPath(pathname: string): { model: string; operation: string } {
  const [, segment, operation] = pathname.match(MODEL_PATH) ?? [];
  const model = checkModelName(decodePathSegment(segment ?? "", "modelId"));
  if (!/^[\x21-\x7e]+$/.test(model)) {
    throw badRequest(
      `modelId: ${
        JSON.stringify(model.slice(0, 80))
      } is not a model id (printable ASCII, no spaces)`,
      "modelId",
    );
  }
  return { model, operation };
}

/**
 * Bedrock's exceptions (lower-cased: in-stream frames name them in camel case) as the status
 * they count as and their kind; the route's `retry.on` then decides (its default retries all
 * the transient ones), except for those another attempt cannot cure (`false`).
 */
const EXCEPTIONS: Record<string, [status: number, kind: ErrorKind, retry?: false]> = {
  throttlingexception: [429, "rate_limit"],
  serviceunavailableexception: [503, "overloaded"],
  modelnotreadyexception: [503, "overloaded"],
  modelstreamerrorexception: [424, "overloaded"],
  modelerrorexception: [424, "overloaded"],
  modeltimeoutexception: [408, "timeout"],
  internalserverexception: [500, "upstream"],
  validationexception: [400, "invalid_request", false],
  resourcenotfoundexception: [404, "model_not_found", false],
  accessdeniedexception: [403, "permission"],
  unrecognizedclientexception: [403, "authentication"],
};

/**
 * The exception Bedrock names for each kind of error, as its clients' SDKs raise it (the
 * reading above, the other way).
 */
const EXCEPTION_OF_KIND: Record<ErrorKind, string> = {
  invalid_request: "ValidationException",
  authentication: "UnrecognizedClientException",
  permission: "AccessDeniedException",
  not_found: "ResourceNotFoundException",
  model_not_found: "ResourceNotFoundException",
  request_too_large: "ValidationException",
  rate_limit: "ThrottlingException",
  upstream: "InternalServerException",
  overloaded: "ServiceUnavailableException",
  timeout: "ModelTimeoutException",
  upstream_interrupted: "ModelStreamErrorException",
};

/** The exception an error is told as (`ThrottlingException`); a more specific `code` if any. */
export const exceptionOf = (kind: ErrorKind, code?: string): string =>
  code?.endsWith("Exception") ? code : EXCEPTION_OF_KIND[kind];

/** An exception's name as an event-stream frame names it (`throttlingException`). */
export const streamExceptionName = (name: string) => name[0].toLowerCase() + name.slice(1);

/** `ThrottlingException:http://internal.amazon.com/…` or `com.amazon…#ThrottlingException`. */
const exceptionName = (type: string) => type.replace(/:.*$/, "").replace(/^.*#/, "").toLowerCase();

/** An exception, in any of its spellings, as the status it counts as and its kind. */
export function bedrockException(type: string): { status: number; kind: ErrorKind } | undefined {
  const known = EXCEPTIONS[exceptionName(type)];
  return known && { status: known[0], kind: known[1] };
}

function messageOf(body: string): string | undefined {
  try {
    const json = JSON.parse(body);
    const message = json?.message ?? json?.Message;
    return typeof message === "string" ? message : undefined;
  } catch {
    return undefined;
  }
}

function typeOf(body: string): string | undefined {
  try {
    const type = JSON.parse(body)?.__type;
    return typeof type === "string" ? type : undefined;
  } catch {
    return undefined;
  }
}

/** A Bedrock error answer, read by its exception name. */
export function bedrockError(
  _status: number,
  headers: Headers,
  body: string,
): PlatformError | undefined {
  const type = headers.get("x-amzn-errortype") ?? typeOf(body);
  const message = messageOf(body);
  const known = type ? EXCEPTIONS[exceptionName(type)] : undefined;
  if (!known) return message === undefined ? undefined : { message };
  const [status, kind, retry] = known;
  const name = type!.replace(/:.*$/, "").replace(/^.*#/, "");
  return { status, kind, retry, message: `${name}: ${message ?? "(no message)"}` };
}

/**
 * CountTokens' answer `{"inputTokens": N}` as Anthropic's `{"input_tokens": N}`. An answer
 * without the count is a 502.
 */
export function countTokensAnswer(json: Record<string, unknown>): Record<string, unknown> {
  const count = json.inputTokens;
  if (typeof count !== "number") {
    throw new GatewayError(502, "upstream", "CountTokens answered without a number in inputTokens");
  }
  return { input_tokens: count };
}

/** A count as Bedrock writes it: a non-negative integer, else undefined. */
function countOf(value: unknown): number | undefined {
  const n = typeof value === "string" ? Number(value) : value;
  return Number.isInteger(n) && (n as number) >= 0 ? n as number : undefined;
}

/** What InvokeModelWithResponseStream's last event (`message_stop`) adds: the billed counts. */
export const METRICS_KEY = "amazon-bedrock-invocationMetrics";

/** Bedrock's own counts, from a stream's invocation metrics or a JSON answer's headers. */
interface Billed {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
}

function metricsCounts(metrics: Record<string, unknown>): Billed {
  return {
    input: countOf(metrics.inputTokenCount),
    output: countOf(metrics.outputTokenCount),
    cacheRead: countOf(metrics.cacheReadInputTokenCount),
    cacheWrite: countOf(metrics.cacheWriteInputTokenCount),
  };
}

function headerCounts(headers: Headers): Billed {
  const header = (name: string) => countOf(headers.get(`x-amzn-bedrock-${name}-token-count`));
  return {
    input: header("input"),
    output: header("output"),
    cacheRead: header("cache-read-input"),
    cacheWrite: header("cache-write-input"),
  };
}

/**
 * An answer's usage from Bedrock's own counts: a stream's `amazon-bedrock-invocationMetrics` in
 * its terminal event, a JSON answer's `x-amzn-bedrock-input-token-count` and
 * `-output-token-count` headers (and the cache reads and writes, when given). They are what AWS
 * bills, so they replace the format's counts (`format`); its share of reasoning stays, and so do
 * its cache counts where Bedrock gives none. Without both an input and an output count,
 * undefined (the format's usage stands). Bedrock's input count, like Anthropic's, leaves out the
 * cache; the IR's total includes it.
 */
export function invocationUsage(from: UsageSource, format: Usage | undefined): Usage | undefined {
  const metrics = from.json.at(-1)?.[METRICS_KEY];
  const billed = metrics && typeof metrics === "object"
    ? metricsCounts(metrics as Record<string, unknown>)
    : from.headers && headerCounts(from.headers);
  if (billed?.input === undefined || billed.output === undefined) return undefined;
  const read = billed.cacheRead ?? format?.cacheReadTokens;
  const write = billed.cacheWrite ?? format?.cacheWriteTokens;
  const usage: Usage = {
    ...format,
    inputTokens: billed.input + (read ?? 0) + (write ?? 0),
    outputTokens: billed.output,
  };
  if (read !== undefined) usage.cacheReadTokens = read;
  if (write !== undefined) usage.cacheWriteTokens = write;
  return usage;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** An exception frame as the error it stands for. */
function streamException(frame: EventStreamFrame): StreamException {
  const type = frame.headers[":exception-type"] ?? "InternalServerException";
  const [status, kind] = EXCEPTIONS[type.toLowerCase()] ?? [500, "upstream"];
  const message = messageOf(decoder.decode(frame.payload)) ?? "(no message)";
  return { status, kind, message: `${type}: ${message}` };
}

/** One `chunk` frame's event: its JSON exactly as Bedrock carried it, named by its `type`. */
function chunkEvent(frame: EventStreamFrame): SseEvent {
  const { bytes } = JSON.parse(decoder.decode(frame.payload));
  const data = decoder.decode(Uint8Array.fromBase64(bytes));
  const type = JSON.parse(data).type;
  return typeof type === "string" ? { event: type, data } : { data };
}

/** One event's `chunk` frame (the inverse): its JSON in base64, as Bedrock sends it. */
export const chunkFrame = (data: string): Uint8Array =>
  jsonFrame("event", "chunk", JSON.stringify({ bytes: encoder.encode(data).toBase64() }));

/**
 * InvokeModelWithResponseStream's frames: re-framed as SSE for a client of the format (the
 * format's endings kept), or relayed as they came to a client of InvokeModel itself, whose
 * framing (`inner`, plugins/bedrock/) writes such frames (`rewrite`: a batch scrubbed of a key).
 */
export function invokeStreamFraming(inner: UpstreamFraming): UpstreamFraming {
  const through = inner.relayedType === EVENT_STREAM_TYPE;
  const reframed = (text: string) => through ? {} : { bytes: encoder.encode(text) };
  return {
    mediaType: EVENT_STREAM_TYPE,
    relayedType: inner.relayedType ?? inner.mediaType,
    ready: loadEventStreams(),
    scan(buf) {
      const events: SseEvent[] = [];
      let text = "";
      const { frames, cut, error } = cutFrames(buf);
      for (const frame of frames) {
        if (frame.headers[":message-type"] !== "event") {
          const error = streamException(frame);
          return { cut, events, text, ...reframed(text), exception: { at: events.length, error } };
        }
        if (frame.headers[":event-type"] !== "chunk") continue;
        let event: SseEvent;
        try {
          event = chunkEvent(frame);
        } catch {
          return { cut, events, malformed: { at: events.length, before: text } };
        }
        events.push(event);
        text += formatSse(event);
      }
      if (error) return { cut: buf.length, events, malformed: { at: events.length, before: text } };
      return { cut, events, text, ...reframed(text) };
    },
    write: inner.write,
    rewrite: inner.rewrite,
    complete: inner.complete,
    interrupted: inner.interrupted,
  };
}
