/** What Bedrock Converse's request, response and stream mappings share. */
import type * as ir from "../../src/contract/ir.ts";
import type { ErrorKind } from "../../src/contract/errors.ts";

/**
 * Converse's reasoning signatures are their own family: AWS documents them as passed back to
 * Converse with the reasoning text, not as interchangeable with Anthropic's API (docs/providers.md).
 */
export const FAMILY: ir.Family = "converse";

export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Claude behind Converse (a model id, inference profile or ARN naming Anthropic's model). */
export const isClaude = (model: string) => /anthropic|claude/i.test(model);

/** Converse `usage` (the JSON body and the stream's `metadata` event). */
export interface WireUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** Converse's `inputTokens` excludes cache reads and writes; the IR total includes them. */
export function usageToIr(u: WireUsage): ir.Usage {
  const usage: ir.Usage = {
    inputTokens: (u.inputTokens ?? 0) + (u.cacheReadInputTokens ?? 0) +
      (u.cacheWriteInputTokens ?? 0),
    outputTokens: u.outputTokens ?? 0,
  };
  if (u.cacheReadInputTokens !== undefined) usage.cacheReadTokens = u.cacheReadInputTokens;
  if (u.cacheWriteInputTokens !== undefined) usage.cacheWriteTokens = u.cacheWriteInputTokens;
  return usage;
}

const FINISH_BY_STOP_REASON: Record<string, ir.FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  content_filtered: "content_filter",
  guardrail_intervened: "content_filter",
  malformed_model_output: "error",
  malformed_tool_use: "error",
};

export const finishFromStopReason = (reason: unknown): ir.FinishReason =>
  FINISH_BY_STOP_REASON[String(reason)] ?? "stop";

/**
 * Bedrock's exceptions (the `x-amzn-errortype` / `__type` name, or an exception frame's
 * `:exception-type`, whose first letter is lower case) as neutral kinds with their statuses.
 */
const EXCEPTIONS: Record<string, { status: number; kind: ErrorKind }> = {
  throttlingexception: { status: 429, kind: "rate_limit" },
  servicequotaexceededexception: { status: 429, kind: "rate_limit" },
  serviceunavailableexception: { status: 503, kind: "overloaded" },
  modelnotreadyexception: { status: 503, kind: "overloaded" },
  modelstreamerrorexception: { status: 503, kind: "overloaded" },
  internalserverexception: { status: 500, kind: "upstream" },
  modeltimeoutexception: { status: 504, kind: "timeout" },
  validationexception: { status: 400, kind: "invalid_request" },
  modelerrorexception: { status: 424, kind: "upstream" },
  resourcenotfoundexception: { status: 404, kind: "model_not_found" },
  accessdeniedexception: { status: 403, kind: "permission" },
  unrecognizedclientexception: { status: 403, kind: "authentication" },
};

/**
 * An exception name (`ThrottlingException:http://internal.amazon.com/…`, a `__type` of
 * `com.amazon.bedrock#ValidationException`, `throttlingException`) as a kind and status.
 */
export function exceptionOf(name: string): { status: number; kind: ErrorKind } | undefined {
  const bare = name.split(":")[0].split("#").at(-1)!;
  return EXCEPTIONS[bare.toLowerCase()];
}

/**
 * A Bedrock error body: `{"message"}` (or `Message`), the exception named by `__type` when the
 * body carries it (the `x-amzn-errortype` header names it otherwise).
 */
export function readBedrockError(
  body: Obj,
  errorType?: string | null,
): { kind?: ErrorKind; message?: string } | undefined {
  const message = body.message ?? body.Message;
  const name = typeof body.__type === "string" ? body.__type : errorType ?? "";
  const kind = exceptionOf(name)?.kind;
  if (typeof message !== "string" && !kind) return undefined;
  return { kind, message: typeof message === "string" ? message : undefined };
}
