/** Test side of `messages` (Anthropic Messages). */
import type { FormatSide } from "../formats.ts";

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: () => "/v1/messages",
    headers: (key) => ({
      "x-api-key": key,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    }),
    body: (model, stream) => ({
      model,
      stream,
      max_tokens: 100,
      messages: [{ role: "user", content: "hi there" }],
    }),
  },
};
