/** Test side of `gcp-vertex`: Gemini and Claude on the Vertex mock. */
import { signature } from "../mock/scenario.ts";
import type { PlatformSide } from "../platforms.ts";
import { CLAUDE_AT, GEMINI_AT, modelCalls, startVertexGateway } from "../vertex_harness.ts";

export const side: PlatformSide = {
  routes: [
    {
      prefix: "vg",
      vendor: "generate-content",
      path: (m, s) => `${GEMINI_AT}/${m}:${s ? "streamGenerateContent" : "generateContent"}`,
      signature: (m) => signature("thought", m),
    },
    {
      prefix: "vc",
      vendor: "messages",
      path: (m, s) => `${CLAUDE_AT}/${m}:${s ? "streamRawPredict" : "rawPredict"}`,
      signature: (m) => signature("thinking", m),
    },
  ],
  async start() {
    const h = await startVertexGateway();
    return { url: h.url, calls: () => modelCalls(h.vertex), close: () => h.close() };
  },
};
