/** Gemini Interactions (`/v1beta/interactions`): @google/genai's `client.interactions`. */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { googleAuthorize } from "../generate-content/plugin.ts";
import { interactionsCodec } from "./codec.ts";
import { interactionsDialect } from "./dialect.ts";
import { createInteraction } from "./endpoints.ts";
import { cancelInteraction } from "./running.ts";
import { deleteInteraction, getInteraction } from "./stored.ts";

export const interactionsPlugin: FormatPlugin<HandlerContext> = {
  id: "interactions",
  family: "gemini",
  system: "gcp.gemini",
  codec: interactionsCodec,
  dialect: interactionsDialect,
  paths: ["/v1beta/interactions"],
  endpoints: [
    {
      name: "interactions",
      operation: "chat",
      method: "POST",
      pattern: /^\/v1beta\/interactions$/,
      example: "/v1beta/interactions",
      handler: createInteraction,
    },
    {
      name: "interaction_get",
      method: "GET",
      pattern: /^\/v1beta\/interactions\/[^/]+$/,
      example: "/v1beta/interactions/int_123",
      handler: getInteraction,
    },
    {
      name: "interaction_delete",
      method: "DELETE",
      pattern: /^\/v1beta\/interactions\/[^/]+$/,
      example: "/v1beta/interactions/int_123",
      handler: deleteInteraction,
    },
    {
      name: "interaction_cancel",
      method: "POST",
      pattern: /^\/v1beta\/interactions\/[^/]+\/cancel$/,
      example: "/v1beta/interactions/int_123/cancel",
      handler: cancelInteraction,
    },
  ],
  upstream: {
    authorize: googleAuthorize,
    forwardHeaders: ["x-goog-api-client", "api-revision"],
  },
};
