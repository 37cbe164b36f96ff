/** OpenAI Chat Completions (`/v1/chat/completions`) and OpenAI's model list. */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { OPENAI_FORWARD_HEADERS, openAiDialect, openAiModel, openAiUpstream } from "../openai.ts";
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
  ],
  upstream: { ...openAiUpstream, forwardHeaders: OPENAI_FORWARD_HEADERS },
  models: {
    path: "/v1/models",
    list: (all) => ({ object: "list", data: all.map(openAiModel) }),
    one: openAiModel,
  },
};
