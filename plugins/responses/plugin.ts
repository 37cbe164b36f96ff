/**
 * OpenAI Responses (`/v1/responses` over HTTP and WebSocket, compact, stored responses): Codex
 * and the OpenAI SDKs. Its model list is chat's (one OpenAI list).
 */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { OPENAI_FORWARD_HEADERS, openAiDialect, openAiUpstream } from "../openai.ts";
import { responsesCodec } from "./codec.ts";
import { compact, responses } from "./endpoints.ts";
import { deleteResponse, getResponse, listInputItems } from "./state.ts";
import { responsesWebSocket } from "./ws.ts";

export const responsesPlugin: FormatPlugin<HandlerContext> = {
  id: "responses",
  family: "openai",
  system: "openai",
  codec: responsesCodec,
  dialect: openAiDialect,
  paths: ["/v1/responses"],
  endpoints: [
    {
      name: "responses",
      operation: "chat",
      method: "POST",
      pattern: /^\/v1\/responses$/,
      example: "/v1/responses",
      handler: responses,
    },
    {
      name: "responses_ws",
      operation: "chat",
      method: "GET",
      pattern: /^\/v1\/responses$/,
      example: "/v1/responses",
      handler: responsesWebSocket,
      upgrade: true,
    },
    {
      name: "responses_compact",
      operation: "compact",
      unbilled: true,
      method: "POST",
      pattern: /^\/v1\/responses\/compact$/,
      example: "/v1/responses/compact",
      handler: compact,
    },
    {
      name: "response_get",
      method: "GET",
      pattern: /^\/v1\/responses\/[^/]+$/,
      example: "/v1/responses/resp_123",
      handler: getResponse,
    },
    {
      name: "response_delete",
      method: "DELETE",
      pattern: /^\/v1\/responses\/[^/]+$/,
      example: "/v1/responses/resp_123",
      handler: deleteResponse,
    },
    {
      name: "response_input_items",
      method: "GET",
      pattern: /^\/v1\/responses\/[^/]+\/input_items$/,
      example: "/v1/responses/resp_123/input_items",
      handler: listInputItems,
    },
  ],
  upstream: { ...openAiUpstream, forwardHeaders: OPENAI_FORWARD_HEADERS },
  // Provider-kept state (previous_response_id, compaction) needs a route that relays as is.
  passthroughRoutes: true,
  defaultVendor: {
    env: "OPENAI",
    name: "openai",
    base_url: "https://api.openai.com/v1",
    models: ["gpt-*", "o*", "codex-*"],
    passthrough: true,
  },
};
