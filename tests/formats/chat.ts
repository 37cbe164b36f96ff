/** Test side of `chat` (OpenAI chat completions). */
import type { FormatSide } from "../formats.ts";
import { bodies, openaiHeaders } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "/v1",
  client: { path: () => "/v1/chat/completions", headers: openaiHeaders, body: bodies.chat },
  mock: {
    provider: "oai-chat",
    routes: [{ models: ["chat-*"] }, { models: ["renamed-*"], model: "chat-text-renamed" }],
    relayModel: "chat-text",
    // Streams ask for usage: relayed, chat reports it only then.
    body: (model, stream) => ({
      ...bodies.chat(model, stream),
      ...(stream && { stream_options: { include_usage: true } }),
    }),
  },
};
