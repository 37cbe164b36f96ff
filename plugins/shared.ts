/** Wire-format conventions that more than one codec follows, each defined once. */
import type { EncodeContext } from "../src/kit/codec.ts";
import {
  badRequest,
  GatewayError,
  malformedEvent,
  type StatusKinds,
  unsupported,
} from "../src/kit/errors.ts";
import type { Dialect, RateLimitState } from "../src/kit/format.ts";
import type * as ir from "../src/kit/ir.ts";
import { carrySignature } from "../src/kit/signature.ts";

// ---- requests ----

const EFFORTS: readonly ir.Effort[] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/** An OpenAI reasoning effort (chat and Responses take the same names): an IR effort, or a 400. */
export function openAiEffort(value: string, field: string): ir.Effort {
  if (!EFFORTS.includes(value as ir.Effort)) {
    throw badRequest(`${field}: expected one of ${EFFORTS.join(", ")}`, field);
  }
  return value as ir.Effort;
}

/** A token budget (Anthropic `budget_tokens`, Gemini `thinkingBudget`) as the nearest effort. */
export function effortForBudget(budget: number | undefined): ir.Effort | undefined {
  if (budget === undefined || budget < 0) return undefined;
  return budget < 2048 ? "low" : budget < 16384 ? "medium" : "high";
}

/** OpenAI's `json_schema` response format (chat nests these fields, Responses does not). */
export function openAiJsonSchema(f: {
  name: string;
  schema?: Record<string, unknown> | null;
  strict?: boolean | null;
  description?: string | null;
}): ir.ResponseFormat {
  const out: ir.ResponseFormat = { type: "json_schema", name: f.name, schema: f.schema ?? {} };
  if (typeof f.strict === "boolean") out.strict = f.strict;
  if (f.description) out.description = f.description;
  return out;
}

/**
 * Fields that change the output and that Anthropic's Messages and Bedrock's Converse have no way
 * to express: more than one choice, penalties, and JSON mode without a schema (their structured
 * output needs a schema, so "any JSON object" has no faithful translation).
 */
export function rejectInexpressible(req: ir.Request, ctx: EncodeContext) {
  if (req.n !== undefined && req.n > 1) {
    throw unsupported("n", ctx.route, "more than one choice (n > 1) cannot be expressed");
  }
  for (
    const [field, value] of [
      ["presence_penalty", req.presencePenalty],
      ["frequency_penalty", req.frequencyPenalty],
    ] as const
  ) {
    if (value) throw unsupported(field, ctx.route, `${field} cannot be expressed`);
  }
  if (req.responseFormat?.type === "json_object") {
    throw unsupported(
      "response_format",
      ctx.route,
      "JSON mode without a schema cannot be expressed",
    );
  }
}

// ---- media ----

const DATA_URI = /^data:([^;,]+)(?:;[^;,]*)*;base64,(.*)$/s;

/** `data:<mime>[;param…];base64,<data>` → its media type and data. */
export function parseDataUri(uri: string): { mediaType: string; data: string } | undefined {
  const m = DATA_URI.exec(uri);
  return m ? { mediaType: m[1], data: m[2] } : undefined;
}

export const dataUri = (mediaType: string, data: string) => `data:${mediaType};base64,${data}`;

/** A URL as an IR media source: a base64 data URI is inline data in disguise. */
export function urlSource(url: string): ir.MediaSource {
  const inline = parseDataUri(url);
  return inline ? { kind: "base64", ...inline } : { kind: "url", url };
}

/**
 * A part's media as inline data or a URL: a data URI is inline data, and a file id (which
 * belongs to the provider that issued it) is a 400.
 */
export function mediaSource(
  part: ir.ImagePart | ir.DocumentPart,
  ctx: EncodeContext,
  path: string,
): Exclude<ir.MediaSource, { kind: "file_id" }> {
  const source = part.source.kind === "url" ? urlSource(part.source.url) : part.source;
  if (source.kind !== "file_id") return source;
  throw unsupported(
    `${path}.file_id`,
    ctx.route,
    "file ids from another provider cannot be resolved",
  );
}

// ---- tool calls ----

/**
 * Formats whose tool arguments are a JSON object (Anthropic, Gemini) declare a custom
 * (free-text) tool as a function taking `{"input": text}`.
 */
export const CUSTOM_INPUT_KEY = "input";

/** A format without free-text tools calls a custom tool as a function taking its text as `input`. */
export const CUSTOM_TOOL_SCHEMA = {
  type: "object",
  properties: {
    [CUSTOM_INPUT_KEY]: { type: "string", description: "The free-form input for this tool." },
  },
  required: [CUSTOM_INPUT_KEY],
};

/**
 * IR arguments (a JSON string) as the object those formats send: a custom tool's text wrapped
 * in `{input}`, and JSON that is not an object kept as `{raw}`.
 */
export function argumentsObject(
  call: Pick<ir.ToolCallPart, "arguments" | "kind">,
): Record<string, unknown> {
  if (call.kind === "custom") return { [CUSTOM_INPUT_KEY]: call.arguments };
  if (call.arguments.trim() === "") return {};
  try {
    const value = JSON.parse(call.arguments);
    if (value && typeof value === "object" && !Array.isArray(value)) return value;
  } catch {
    // not JSON: fall through
  }
  return { raw: call.arguments };
}

/** Chat and Responses tool results have no error flag (§5.4): the text says so instead. */
export const TOOL_ERROR_PREFIX = "Error: ";

// ---- signatures ----

/**
 * Where a format's only opaque slot cannot tell what a carried value stands for, the value
 * starts with a marker (after the family, where no real signature starts so):
 * - `attached:` — the signature of the text or tool call just before the carrier;
 * - `redacted:` — redacted thinking's data (not a signature).
 */
type Marker = "attached:" | "redacted:";
export const ATTACHED: Marker = "attached:";
export const REDACTED: Marker = "redacted:";

/** A signature (or redacted data) behind `marker`, for a slot of the `host` family. */
export const carryMarked = (marker: Marker, sig: ir.Signature, host: ir.Family): string =>
  carrySignature({ family: sig.family, value: marker + sig.value }, host);

/** What a slot's value carries behind `marker`; undefined when it has no such marker. */
export function readMarked(marker: Marker, sig: ir.Signature): ir.Signature | undefined {
  if (!sig.value.startsWith(marker)) return undefined;
  return { family: sig.family, value: sig.value.slice(marker.length) };
}

// ---- clients ----

/** The `Authorization: Bearer` token of a request. */
export function bearer(headers: Headers): string | undefined {
  const m = headers.get("authorization")?.match(/^Bearer\s+(.+)$/i);
  return m?.[1].trim();
}

// ---- upstream errors ----

/**
 * Anthropic's own status: 529, overloaded. OpenAI-compatible proxies in front of Anthropic
 * models pass it through, so the OpenAI formats read it too.
 */
export const ANTHROPIC_STATUSES: StatusKinds = { 529: "overloaded" };

/** Anthropic's `overloaded_error` type says what its 529 does, whatever the status relayed. */
export function overloadedError(body: Record<string, unknown>): { kind: "overloaded" } | undefined {
  const type = (body.error as { type?: unknown } | undefined)?.type;
  return type === "overloaded_error" ? { kind: "overloaded" } : undefined;
}

// ---- streams ----

/** A string that says something (an opaque token, an id), else undefined. */
export const nonEmpty = (v: unknown): string | undefined =>
  typeof v === "string" && v !== "" ? v : undefined;

/** An SSE event's JSON object; undefined for anything else (keep-alive noise, `null`). */
export function jsonObjectOf(data: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(data);
    return typeof value === "object" && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An upstream stream event's JSON object, for a codec's stream decoder: undefined for `[DONE]`
 * (the end marker every SSE dialect of a gateway writes, one in front of this one too); anything
 * else that is not a JSON object throws `malformedEvent`, and the client's stream ends with its
 * format's interruption ending (docs/security-and-faults.md), never dropped or ended normally.
 */
export function eventObject(data: string): Record<string, unknown> | undefined {
  if (data === "[DONE]") return undefined;
  const value = jsonObjectOf(data);
  if (!value || Array.isArray(value)) throw malformedEvent();
  return value;
}

/** An IR stream error as the body of the client dialect's error object. */
export function streamErrorBody(
  dialect: Dialect,
  e: Extract<ir.StreamEvent, { type: "error" }>,
): unknown {
  return dialect.errorBody(new GatewayError(e.status, e.kind, e.message));
}

/**
 * A provider's stop reason as IR by the names its API documents (`table`). A name the table
 * lacks is `unknown`: an error by default — a reason added later, or one meaning a failure, is
 * never read as a finished answer. A reason absent (or null) reads as a stop, as it always has.
 */
export function finishByName(
  table: Readonly<Record<string, ir.FinishReason>>,
  reason: unknown,
  unknown: ir.FinishReason = "error",
): ir.FinishReason {
  if (typeof reason !== "string") return "stop";
  return Object.hasOwn(table, reason) ? table[reason] : unknown;
}

/**
 * An answer that ended in error (Gemini's `OTHER`, a broken tool protocol, a reason the gateway
 * does not know) to a client whose format has no error stop (chat, Messages): it ends with the
 * format's error instead of any success stop; an answer ending in tool calls still reports them.
 * The answer is the provider's own and billed: no other target is asked for it again.
 */
export function errorFinish(
  reason: ir.FinishReason,
  sawToolCall: boolean,
): GatewayError | undefined {
  if (reason !== "error" || sawToolCall) return undefined;
  const e = new GatewayError(502, "upstream", "the upstream model ended the answer with an error");
  e.retry = false;
  return e;
}

/** The error event a stream ends with for `errorFinish`. */
export const errorEvent = (e: GatewayError): Extract<ir.StreamEvent, { type: "error" }> => ({
  type: "error",
  status: e.status,
  kind: e.kind,
  message: e.message,
});

// ---- errors ----

/** HTTP statuses of OpenAI error types and codes (both APIs use the same names). */
const OPENAI_ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  context_length_exceeded: 400,
  invalid_prompt: 400,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  service_unavailable_error: 503,
  server_is_overloaded: 503,
  slow_down: 503,
  timeout_error: 504,
};

/** An OpenAI in-stream error's HTTP status from its code or type (a numeric code is one). */
export function openAiErrorStatus(type: unknown, code: unknown): number {
  if (typeof code === "number" && code >= 400 && code < 600) return code;
  return OPENAI_ERROR_STATUS[String(code)] ?? OPENAI_ERROR_STATUS[String(type)] ?? 500;
}

// ---- relayed stream watches ----

/** A top-level `error` member at the start of a JSON payload (chat and Gemini error chunks). */
export const ERROR_PAYLOAD = /^\s*\{\s*"error"\s*:/;

/**
 * A relayed stream whose last event that carries usage is the one that counts: that event's
 * text is kept (`keep`), for the codec's `usage` to read at the end (`usageEvents`).
 */
export function lastUsageEvent() {
  let text: string | undefined;
  return {
    keep(data: string) {
      text = data;
    },
    usageEvents: (): readonly string[] => text === undefined ? [] : [text],
  };
}

/** A count a request body gives (a positive number), if it gives one. */
export const countOf = (v: unknown): number | undefined =>
  typeof v === "number" && v > 0 ? v : undefined;

const BACKSLASH = 92;

/**
 * What `stringChars` looks for: the members `names` up to their string value's opening quote
 * (`"name": "`). Made once per format: a match is always a member, a quote inside a string being
 * escaped, so a string that mentions a name does not count.
 */
export const members = (names: readonly string[]): RegExp =>
  new RegExp(`"(?:${names.join("|")})"\\s*:\\s*"`, "g");

/**
 * Characters of the string values of `pattern`'s members (`members`) anywhere in a JSON text
 * (`first`: the first one's only), an escape counted as the character it stands for; without
 * parsing it. A relayed stream's watch counts the output it relays with it
 * (`StreamWatch.output`): a regular expression, as a multi-character `indexOf` costs more.
 */
export function stringChars(json: string, pattern: RegExp, first = false): number {
  let chars = 0;
  pattern.lastIndex = 0;
  // `test`, not `exec`: no match array made per member.
  while (pattern.test(json)) {
    const from = pattern.lastIndex;
    const end = stringEnd(json, from);
    chars += end - from - escapeExtra(json, from, end);
    if (first) break;
    pattern.lastIndex = end + 1;
  }
  return chars;
}

/** The index of the quote that closes the JSON string starting at `from` (or the text's end). */
function stringEnd(json: string, from: number): number {
  for (let q = json.indexOf('"', from); q !== -1; q = json.indexOf('"', q + 1)) {
    let slashes = 0;
    while (json.charCodeAt(q - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q;
  }
  return json.length;
}

/** How many more characters the escapes in json[from, end) take than what they stand for. */
function escapeExtra(json: string, from: number, end: number): number {
  let extra = 0;
  for (let b = json.indexOf("\\", from); b !== -1 && b < end; b = json.indexOf("\\", b)) {
    const unicode = json.charCodeAt(b + 1) === 117; /* u */
    extra += unicode ? 5 : 1;
    b += unicode ? 6 : 2;
  }
  return extra;
}

/**
 * A page of a `{data: [{id}], has_more, last_id}` model list (Anthropic's, and OpenAI-compatible
 * servers that page), whose next page is asked for with `after` = the last id.
 */
export function idPage(body: Record<string, unknown>, after: string) {
  const ids = Array.isArray(body.data)
    ? body.data.flatMap((m) => typeof m?.id === "string" && m.id ? [m.id as string] : [])
    : [];
  const more = body.has_more === true && typeof body.last_id === "string";
  return { ids, next: more ? { [after]: body.last_id as string } : undefined };
}

type LimitKind = keyof RateLimitState;
const LIMIT_KINDS: readonly LimitKind[] = ["requests", "tokens"];

/**
 * A dialect's rate-limit headers: for each window kind, its three names (limit, remaining,
 * reset, built once) and the reset written as `reset(at, now)` says.
 */
export function rateLimitHeaders(
  names: (kind: LimitKind) => readonly [string, string, string],
  reset: (at: number, now: number) => string,
): (state: RateLimitState, now: number) => [string, string][] {
  const byKind = LIMIT_KINDS.map((kind) => [kind, names(kind)] as const);
  return (state, now) => {
    const out: [string, string][] = [];
    for (const [kind, [limit, remaining, resetName]] of byKind) {
      const w = state[kind];
      if (!w) continue;
      out.push([limit, String(w.limit)], [remaining, String(w.remaining)], [
        resetName,
        reset(w.reset, now),
      ]);
    }
    return out;
  };
}

/**
 * Chat's end-of-stream record. The gateway's SSE dialects send it after an interruption event
 * (each dialect's own ending, src/kit/format.ts `interruption`).
 */
export const DONE = "data: [DONE]\n\n";
