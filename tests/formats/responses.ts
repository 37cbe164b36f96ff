/** Test side of `responses` (OpenAI Responses). */
import type { FormatSide } from "../formats.ts";
import { bodies, openaiHeaders } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "/v1",
  client: {
    path: () => "/v1/responses",
    headers: openaiHeaders,
    // `store: false`: the response keeps the upstream's id and OpenAI's defaults.
    body: (model, stream) => ({ ...bodies.responses(model, stream), store: false }),
  },
  mock: {
    provider: "oai",
    routes: [{ models: ["pt-*"], passthrough: true }, { models: ["resp-*"] }],
    relayModel: "pt-text",
    body: bodies.responses,
  },
};
