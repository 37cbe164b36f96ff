/**
 * Test side of `vertex-messages` (Claude's rawPredict on Vertex AI, a format only clients
 * speak): Anthropic's Messages body without `model`, with Vertex's `anthropic_version`.
 */
import type { FormatSide } from "../formats.ts";
import { bodies, vertexHeaders, vertexModels } from "../requests.ts";
import { side as messages } from "./messages.ts";

export const side: FormatSide = {
  client: {
    path: (model, stream) =>
      `${vertexModels("anthropic")}${model}:${stream ? "streamRawPredict" : "rawPredict"}`,
    headers: vertexHeaders,
    body: bodies.vertexClaude,
    // The path names the model; the version is Vertex's.
    rich: { anthropic_version: "vertex-2023-10-16", ...messages.client.rich },
  },
  loop: {
    ask: (model, stream, question) => {
      const { model: _, ...ask } = messages.loop!.ask(model, stream, question);
      return { anthropic_version: "vertex-2023-10-16", ...ask };
    },
    followUp: messages.loop!.followUp,
  },
};
