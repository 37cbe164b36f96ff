/** Test side of `generate-content` (Gemini generateContent). */
import type { FormatSide } from "../formats.ts";
import { bodies, googleHeaders, LOOP_TOOL } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: (model, stream) =>
      `/v1beta/models/${model}${stream ? ":streamGenerateContent?alt=sse" : ":generateContent"}`,
    headers: googleHeaders,
    body: bodies.gemini,
    rich: {
      contents: [
        { role: "user", parts: [{ text: "hi" }] },
        { role: "model", parts: [{ functionCall: { name: "f", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "f", response: { output: "r" } } }] },
      ],
      systemInstruction: { parts: [{ text: "s" }] },
      tools: [{ functionDeclarations: [{ name: "f", parameters: { type: "OBJECT" } }] }],
      generationConfig: { temperature: 0.5, thinkingConfig: { thinkingBudget: 100 } },
    },
  },
  mock: { provider: "gemini", routes: [{ models: ["gem-*"] }], relayModel: "gem-text" },
  loop: {
    // The model and streaming are in the path.
    ask: (_model, _stream, question) => ({
      contents: [{ role: "user", parts: [{ text: question }] }],
      tools: [{ functionDeclarations: [LOOP_TOOL] }],
    }),
    followUp: (ask, answer, call, result) => ({
      ...ask,
      contents: [
        ...ask.contents as unknown[],
        (answer.candidates as { content: unknown }[])[0].content,
        {
          role: "user",
          parts: [{ functionResponse: { name: call.name, response: { output: result } } }],
        },
      ],
    }),
  },
};
