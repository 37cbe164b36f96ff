/** Test side of `messages` (Anthropic Messages). */
import type { FormatSide } from "../formats.ts";
import { anthropicHeaders, bodies } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "",
  client: { path: () => "/v1/messages", headers: anthropicHeaders, body: bodies.messages },
  mock: { provider: "anthropic", routes: [{ models: ["msg-*"] }], relayModel: "msg-text" },
};
