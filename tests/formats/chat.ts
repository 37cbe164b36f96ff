/** Test side of `chat` (OpenAI chat completions). */
import type { FormatSide } from "../formats.ts";
import { bodies, openaiHeaders } from "../helpers.ts";

export const side: FormatSide = {
  providerBase: "/v1",
  client: { path: () => "/v1/chat/completions", headers: openaiHeaders, body: bodies.chat },
};
