/** Test side of `responses` (OpenAI Responses). */
import type { FormatSide } from "../formats.ts";

export const side: FormatSide = {
  providerBase: "/v1",
  client: {
    path: () => "/v1/responses",
    headers: (key) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" }),
    // `store: false`: the response keeps the upstream's id and OpenAI's defaults.
    body: (model, stream) => ({ model, stream, input: "hi there", store: false }),
  },
};
