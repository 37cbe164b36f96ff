/** Anthropic Messages (`/v1/messages`, count_tokens): Claude Code and the Anthropic SDKs. */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { messagesCodec } from "./codec.ts";
import { anthropicDialect, anthropicModels } from "./dialect.ts";
import { countTokens, messages } from "./endpoints.ts";
import { ANTHROPIC_STATUSES, idPage, overloadedError } from "../shared.ts";

/** The API version sent upstream when the client named none (converted calls). */
const DEFAULT_VERSION = "2023-06-01";

export const messagesPlugin: FormatPlugin<HandlerContext> = {
  id: "messages",
  family: "anthropic",
  system: "anthropic",
  codec: messagesCodec,
  dialect: anthropicDialect,
  paths: ["/v1/messages"],
  endpoints: [
    {
      name: "messages",
      operation: "chat",
      method: "POST",
      pattern: /^\/v1\/messages$/,
      example: "/v1/messages",
      handler: messages,
    },
    {
      name: "count_tokens",
      operation: "count_tokens",
      unbilled: true,
      method: "POST",
      pattern: /^\/v1\/messages\/count_tokens$/,
      example: "/v1/messages/count_tokens",
      handler: countTokens,
    },
  ],
  upstream: {
    authorize(req, key) {
      if (key) req.headers.set("x-api-key", key);
      if (!req.headers.has("anthropic-version")) {
        req.headers.set("anthropic-version", DEFAULT_VERSION);
      }
    },
    statusKinds: ANTHROPIC_STATUSES,
    readError: overloadedError,
    models: { path: "/v1/models?limit=1000", page: (body) => idPage(body, "after_id") },
    forwardHeaders: ["anthropic-beta", "anthropic-version", "x-stainless-"],
    responseHeaders: ["anthropic-ratelimit-"],
  },
  models: anthropicModels,
  defaultVendor: {
    env: "ANTHROPIC",
    name: "anthropic",
    base_url: "https://api.anthropic.com",
    models: ["claude-*"],
  },
};
