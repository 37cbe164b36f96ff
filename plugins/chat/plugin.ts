/**
 * OpenAI Chat Completions (`/v1/chat/completions`), OpenAI's embeddings endpoint
 * (`/v1/embeddings`, plugins/openai_embeddings.ts) and OpenAI's model list.
 */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { OPENAI_FORWARD_HEADERS, openAiDialect, openAiModel, openAiUpstream } from "../openai.ts";
import { embeddingsEndpoint, openAiEmbeddings } from "../openai_embeddings.ts";
import { chatCodec } from "./codec.ts";
import { chatCompletions } from "./endpoints.ts";

export const chatPlugin: FormatPlugin<HandlerContext> = {
  id: "chat",
  family: "openai",
  system: "openai",
  codec: chatCodec,
  dialect: openAiDialect,
  paths: ["/v1/"],
  endpoints: [
    {
      name: "chat",
      operation: "chat",
      method: "POST",
      pattern: /^\/v1\/chat\/completions$/,
      example: "/v1/chat/completions",
      handler: chatCompletions,
    },
    {
      name: "embeddings",
      operation: "embeddings",
      method: "POST",
      pattern: /^\/v1\/embeddings$/,
      example: "/v1/embeddings",
      handler: embeddingsEndpoint,
    },
  ],
  upstream: { ...openAiUpstream, forwardHeaders: OPENAI_FORWARD_HEADERS },
  embeddings: () => openAiEmbeddings,
  models: {
    path: "/v1/models",
    list: (all) => ({ object: "list", data: all.map(openAiModel) }),
    one: openAiModel,
  },
};
