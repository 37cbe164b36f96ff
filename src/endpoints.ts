/**
 * Every path the service answers, in one table: the server dispatches on it, and the kong.yml
 * test checks that Kong routes exactly these.
 */

/** Which vendor's error envelope a path speaks. */
export type Dialect = "openai" | "anthropic" | "google";

export type EndpointName =
  | "chat"
  | "responses"
  | "responses_ws"
  | "responses_compact"
  | "response_get"
  | "response_delete"
  | "response_input_items"
  | "generate_content"
  | "messages"
  | "count_tokens"
  | "models"
  | "gemini_models"
  | "model"
  | "gemini_model"
  | "healthz"
  | "readyz";

export interface Endpoint {
  name: EndpointName;
  method: "GET" | "POST" | "DELETE";
  /** Matches the path (query string excluded). */
  pattern: RegExp;
  /** A concrete path that matches, for docs and tests. */
  example: string;
  dialect: Dialect;
  /**
   * Where the key may be, when not where `dialect` puts it: the model list takes Bearer or
   * `x-api-key` (Claude Code reads it with its Anthropic credentials).
   */
  keyDialect?: Dialect;
  /** Infrastructure endpoints (health) are not routed through Kong to clients. */
  internal?: boolean;
}

export const ENDPOINTS: readonly Endpoint[] = [
  {
    name: "chat",
    method: "POST",
    pattern: /^\/v1\/chat\/completions$/,
    example: "/v1/chat/completions",
    dialect: "openai",
  },
  {
    name: "responses",
    method: "POST",
    pattern: /^\/v1\/responses$/,
    example: "/v1/responses",
    dialect: "openai",
  },
  {
    name: "responses_ws",
    method: "GET",
    pattern: /^\/v1\/responses$/,
    example: "/v1/responses",
    dialect: "openai",
  },
  {
    name: "responses_compact",
    method: "POST",
    pattern: /^\/v1\/responses\/compact$/,
    example: "/v1/responses/compact",
    dialect: "openai",
  },
  {
    name: "response_get",
    method: "GET",
    pattern: /^\/v1\/responses\/[^/]+$/,
    example: "/v1/responses/resp_123",
    dialect: "openai",
  },
  {
    name: "response_delete",
    method: "DELETE",
    pattern: /^\/v1\/responses\/[^/]+$/,
    example: "/v1/responses/resp_123",
    dialect: "openai",
  },
  {
    name: "response_input_items",
    method: "GET",
    pattern: /^\/v1\/responses\/[^/]+\/input_items$/,
    example: "/v1/responses/resp_123/input_items",
    dialect: "openai",
  },
  {
    name: "generate_content",
    method: "POST",
    // The model and action are validated by the plugin so bad ones get a Google-style 400.
    pattern: /^\/v1beta\/models\/[^/]+$/,
    example: "/v1beta/models/gemini-2.5-flash:generateContent",
    dialect: "google",
  },
  {
    name: "messages",
    method: "POST",
    pattern: /^\/v1\/messages$/,
    example: "/v1/messages",
    dialect: "anthropic",
  },
  {
    name: "count_tokens",
    method: "POST",
    pattern: /^\/v1\/messages\/count_tokens$/,
    example: "/v1/messages/count_tokens",
    dialect: "anthropic",
  },
  {
    name: "models",
    method: "GET",
    keyDialect: "anthropic",
    pattern: /^\/v1\/models$/,
    example: "/v1/models",
    dialect: "openai",
  },
  {
    name: "model",
    method: "GET",
    keyDialect: "anthropic",
    pattern: /^\/v1\/models\/[^/]+$/,
    example: "/v1/models/claude-sonnet-4-5",
    dialect: "openai",
  },
  {
    name: "gemini_models",
    method: "GET",
    pattern: /^\/v1beta\/models$/,
    example: "/v1beta/models",
    dialect: "google",
  },
  {
    name: "gemini_model",
    method: "GET",
    // POST on the same path is generation (`model:action`); GET reads the model.
    pattern: /^\/v1beta\/models\/[^/]+$/,
    example: "/v1beta/models/gemini-2.5-flash",
    dialect: "google",
  },
  {
    name: "healthz",
    method: "GET",
    pattern: /^\/healthz$/,
    example: "/healthz",
    dialect: "openai",
    internal: true,
  },
  {
    name: "readyz",
    method: "GET",
    pattern: /^\/readyz$/,
    example: "/readyz",
    dialect: "openai",
    internal: true,
  },
];

/** The error dialect of any path, matched or not (unknown paths still get the right envelope). */
export function dialectOf(path: string): Dialect {
  if (path.startsWith("/v1/messages")) return "anthropic";
  if (path.startsWith("/v1beta/")) return "google";
  return "openai";
}
