/** Test side of `chat` (OpenAI chat completions). */
import type { FormatSide } from "../formats.ts";

export const side: FormatSide = {
  providerBase: "/v1",
  client: {
    path: () => "/v1/chat/completions",
    headers: (key) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" }),
    body: (model, stream) => ({ model, stream, messages: [{ role: "user", content: "hi there" }] }),
  },
};
