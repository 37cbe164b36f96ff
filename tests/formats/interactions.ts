/** Test side of `interactions` (Gemini Interactions). */
import type { FormatSide } from "../formats.ts";

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: () => "/v1beta/interactions",
    headers: (key) => ({ "x-goog-api-key": key, "content-type": "application/json" }),
    body: (model, stream) => ({ model, stream, input: "hi there" }),
  },
};
