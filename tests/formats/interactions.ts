/** Test side of `interactions` (Gemini Interactions). */
import type { FormatSide } from "../formats.ts";
import { googleHeaders } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: () => "/v1beta/interactions",
    headers: googleHeaders,
    // `store: false`: the interaction keeps the upstream's id.
    body: (model, stream) => ({ model, stream, input: "hi there", store: false }),
  },
};
