/** Test side of `generate-content` (Gemini generateContent). */
import type { FormatSide } from "../formats.ts";
import { bodies, googleHeaders } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: (model, stream) =>
      `/v1beta/models/${model}${stream ? ":streamGenerateContent?alt=sse" : ":generateContent"}`,
    headers: googleHeaders,
    body: bodies.gemini,
  },
  mock: { provider: "gemini", routes: [{ models: ["gem-*"] }], relayModel: "gem-text" },
};
