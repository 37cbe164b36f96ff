/** Test side of `interactions` (Gemini Interactions). */
import type { FormatSide } from "../formats.ts";
import { googleHeaders, LOOP_TOOL } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: () => "/v1beta/interactions",
    headers: googleHeaders,
    // `store: false`: the interaction keeps the upstream's id.
    body: (model, stream) => ({ model, stream, input: "hi there", store: false }),
    rich: {
      store: false,
      input: [
        {
          type: "user_input",
          content: [{ type: "text", text: "hi" }, {
            type: "image",
            data: "AAAA",
            mime_type: "image/png",
          }],
        },
        { type: "function_call", id: "c1", name: "f", arguments: {} },
        { type: "function_result", call_id: "c1", name: "f", result: "r" },
      ],
      system_instruction: "s",
      tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
      generation_config: { temperature: 0.5, max_output_tokens: 100, tool_choice: "auto" },
    },
  },
  // Gemini's own Interactions endpoint, on the mock beside generateContent.
  mock: {
    provider: "gemini-int",
    routes: [{ models: ["int-*"], passthrough: false }],
    relayModel: "int-text",
  },
  loop: {
    // Stateless: each turn sends the whole history as steps.
    ask: (model, stream, question) => ({
      model,
      stream,
      store: false,
      input: [{ type: "user_input", content: [{ type: "text", text: question }] }],
      tools: [{ type: "function", ...LOOP_TOOL }],
    }),
    followUp: (ask, answer, call, result) => ({
      ...ask,
      input: [
        ...ask.input as unknown[],
        ...(answer.steps as { type: string }[]).filter((s) => s.type !== "user_input"),
        { type: "function_result", call_id: call.id, name: call.name, result },
      ],
    }),
  },
};
