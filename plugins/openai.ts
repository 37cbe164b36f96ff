/**
 * What the two OpenAI formats (chat completions and Responses) share: their clients' error
 * dialect and key, and how their providers are credentialed. Not a plugin of its own.
 */
import type { ErrorKind, GatewayError } from "../src/kit/errors.ts";
import type { Dialect, UpstreamSpec } from "../src/kit/format.ts";
import type { ListedModel } from "../src/kit/format.ts";
import {
  ANTHROPIC_STATUSES,
  bearer,
  DONE,
  idPage,
  overloadedError,
  rateLimitHeaders,
} from "./shared.ts";

const TYPE: Record<ErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "invalid_request_error",
  permission: "permission_error",
  not_found: "invalid_request_error",
  model_not_found: "invalid_request_error",
  request_too_large: "invalid_request_error",
  rate_limit: "rate_limit_error",
  upstream: "server_error",
  overloaded: "service_unavailable_error",
  timeout: "timeout_error",
  upstream_interrupted: "upstream_interrupted",
};

const CODE: Partial<Record<ErrorKind, string>> = {
  authentication: "invalid_api_key",
  model_not_found: "model_not_found",
  rate_limit: "rate_limit_exceeded",
  upstream_interrupted: "upstream_interrupted",
};

/** An OpenAI error `code` for a kind (its type where OpenAI has no code): stream error events. */
export const openAiErrorCode = (kind: ErrorKind): string => CODE[kind] ?? TYPE[kind];

/** A duration as OpenAI's headers write it: `1s`, `6m0s`, `2h3m4s` (seconds rounded up). */
export function goDuration(ms: number): string {
  let s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}

/** OpenAI's `x-ratelimit-*` headers: limit, remaining, and the reset as a duration (`6m0s`). */
const openAiRateLimitHeaders = rateLimitHeaders(
  (kind) => [
    `x-ratelimit-limit-${kind}`,
    `x-ratelimit-remaining-${kind}`,
    `x-ratelimit-reset-${kind}`,
  ],
  (at, now) => goDuration(at - now),
);

export const openAiDialect: Dialect = {
  id: "openai",
  presentedKey: (req) => bearer(req.headers),
  keyLocations: ["Authorization: Bearer <key>"],
  errorBody: (err: GatewayError) => ({
    error: {
      message: err.message,
      type: TYPE[err.kind],
      param: err.param ?? null,
      code: err.code ?? CODE[err.kind] ?? null,
    },
  }),
  // Anthropic's 529 is unknown to OpenAI SDKs; 503 is what they retry.
  status: (status) => (status === 529 ? 503 : status),
  rateLimitHeaders: openAiRateLimitHeaders,
  interruption: (message) => {
    const error = { type: "upstream_interrupted", message };
    // Then chat's end marker: a chat SDK stops reading at it.
    return `data: ${JSON.stringify({ type: "upstream_interrupted", error })}\n\n${DONE}`;
  },
};

/** OpenAI providers take the key as a Bearer token. */
export const openAiUpstream: Pick<
  UpstreamSpec,
  "authorize" | "responseHeaders" | "statusKinds" | "readError" | "models"
> = {
  authorize(req, key) {
    if (key) req.headers.set("authorization", `Bearer ${key}`);
  },
  // OpenAI-compatible proxies in front of Anthropic models pass its overload through.
  statusKinds: ANTHROPIC_STATUSES,
  readError: overloadedError,
  // OpenAI answers one page; compatible servers that page do it the Anthropic way.
  models: { path: "/models", page: (body) => idPage(body, "after") },
  responseHeaders: [
    "openai-processing-ms",
    "openai-version",
    "openai-model",
    // Codex reads these (model list etag, reasoning, rate-limit windows).
    "x-codex-",
    "x-models-etag",
    "x-reasoning-included",
  ],
};

/** Headers OpenAI SDKs and Codex send that their providers read. */
export const OPENAI_FORWARD_HEADERS = [
  "openai-beta",
  "originator",
  "session_id",
  "session-id",
  "thread-id",
  "version",
  "x-codex-",
  "x-openai-subagent",
  "x-stainless-",
] as const;

/** OpenAI's model object (chat and Responses clients read the same list). */
export const openAiModel = (m: ListedModel) => ({
  id: m.id,
  object: "model",
  created: 0,
  owned_by: m.owned_by,
});
