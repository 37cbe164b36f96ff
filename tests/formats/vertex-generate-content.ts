/**
 * Test side of `vertex-generate-content` (Gemini's generateContent on Vertex AI, a format only
 * clients speak): Gemini's body at Vertex's path, as `@google/genai` in Vertex mode calls it.
 */
import type { FormatSide } from "../formats.ts";
import { bodies, vertexHeaders, vertexModels } from "../requests.ts";
import { side as gemini } from "./generate-content.ts";

export const side: FormatSide = {
  client: {
    path: (model, stream) =>
      `${vertexModels("google", "us-central1", "v1beta1")}${model}${
        stream ? ":streamGenerateContent?alt=sse" : ":generateContent"
      }`,
    headers: vertexHeaders,
    body: bodies.gemini,
    rich: gemini.client.rich,
  },
  loop: gemini.loop,
};
