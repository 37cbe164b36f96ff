/** Anthropic's error envelope, where its clients put their key, and its model list. */
import type { ErrorKind, GatewayError } from "../../src/kit/errors.ts";
import type { Dialect, ModelListing } from "../../src/kit/format.ts";
import type { ListedModel } from "../../src/kit/format.ts";
import { bearer, DONE, rateLimitHeaders } from "../shared.ts";

const TYPE: Record<ErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "authentication_error",
  permission: "permission_error",
  not_found: "not_found_error",
  model_not_found: "not_found_error",
  request_too_large: "request_too_large",
  rate_limit: "rate_limit_error",
  upstream: "api_error",
  overloaded: "overloaded_error",
  timeout: "timeout_error",
  upstream_interrupted: "upstream_interrupted",
};

/**
 * Anthropic's `anthropic-ratelimit-*` headers: limit, remaining, and the reset (RFC 3339, in whole
 * seconds rounded up: never before the window frees).
 */
const anthropicRateLimitHeaders = rateLimitHeaders(
  (kind) => [
    `anthropic-ratelimit-${kind}-limit`,
    `anthropic-ratelimit-${kind}-remaining`,
    `anthropic-ratelimit-${kind}-reset`,
  ],
  (at) => new Date(Math.ceil(at / 1000) * 1000).toISOString().replace(".000Z", "Z"),
);

export const anthropicDialect: Dialect = {
  id: "anthropic",
  // The Anthropic SDK 1.x authenticates with a Bearer token; older ones and curl x-api-key.
  presentedKey: (req) => req.headers.get("x-api-key") ?? bearer(req.headers),
  keyLocations: ["x-api-key: <key>", "Authorization: Bearer <key>"],
  rateLimitHeaders: anthropicRateLimitHeaders,
  errorBody: (err: GatewayError, requestId?: string) => ({
    type: "error",
    error: { type: TYPE[err.kind], message: err.message },
    ...(requestId ? { request_id: requestId } : {}),
  }),
  interruption: (message) => {
    const error = { type: "upstream_interrupted", message };
    const data = JSON.stringify({ type: "upstream_interrupted", error });
    // The Anthropic SDK ignores records without an event name; `error` makes it throw.
    // The `[DONE]` record after it is what this gateway has always sent (the SDK skips it).
    return `event: error\ndata: ${data}\n\n${DONE}`;
  },
};

const anthropicModel = (m: ListedModel) => ({
  type: "model",
  id: m.id,
  display_name: m.display_name ?? m.id,
  created_at: "1970-01-01T00:00:00Z",
  ...(m.context_window && { max_input_tokens: m.context_window }),
  ...(m.max_output_tokens && { max_tokens: m.max_output_tokens }),
});

/**
 * Anthropic's list, at the path OpenAI's is: it answers Anthropic clients, who send
 * `anthropic-version` (the SDK 1.x authenticates with a Bearer token) or `x-api-key` alone.
 */
export const anthropicModels: ModelListing = {
  path: "/v1/models",
  claims: (req) =>
    req.headers.has("anthropic-version") ||
    (req.headers.has("x-api-key") && !req.headers.has("authorization")),
  list(all, url) {
    const q = url.searchParams;
    const limit = Math.min(Math.max(Number(q.get("limit") ?? 20) || 20, 1), 1000);
    let list = all;
    const after = q.get("after_id");
    const before = q.get("before_id");
    if (after) list = list.slice(list.findIndex((m) => m.id === after) + 1);
    if (before) {
      const at = list.findIndex((m) => m.id === before);
      if (at >= 0) list = list.slice(Math.max(0, at - limit), at);
    }
    const data = list.slice(0, limit).map(anthropicModel);
    return {
      data,
      has_more: list.length > limit,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
    };
  },
  one: anthropicModel,
};
