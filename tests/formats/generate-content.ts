/** Test side of `generate-content` (Gemini generateContent). */
import type { FormatSide } from "../formats.ts";

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: (model, stream) =>
      `/v1beta/models/${model}${stream ? ":streamGenerateContent?alt=sse" : ":generateContent"}`,
    headers: (key) => ({ "x-goog-api-key": key, "content-type": "application/json" }),
    body: () => ({ contents: [{ role: "user", parts: [{ text: "hi there" }] }] }),
  },
};
