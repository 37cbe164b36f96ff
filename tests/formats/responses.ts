/** Test side of `responses` (OpenAI Responses). */
import type { FormatSide } from "../formats.ts";
import { bodies, LOOP_TOOL, openaiHeaders } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "/v1",
  client: {
    path: () => "/v1/responses",
    headers: openaiHeaders,
    // `store: false`: the response keeps the upstream's id and OpenAI's defaults.
    body: (model, stream) => ({ ...bodies.responses(model, stream), store: false }),
    rich: {
      input: [
        { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "r" },
      ],
      instructions: "i",
      tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
      reasoning: { effort: "low" },
      text: { format: { type: "text" } },
    },
  },
  mock: {
    provider: "oai",
    routes: [{ models: ["pt-*"], passthrough: true }, { models: ["resp-*"] }],
    relayModel: "pt-text",
    body: bodies.responses,
  },
  loop: {
    // As Codex asks: stateless, reasoning carried back in `encrypted_content`.
    ask: (model, stream, question) => ({
      model,
      stream,
      store: false,
      include: ["reasoning.encrypted_content"],
      input: [{ role: "user", content: question }],
      tools: [{ type: "function", ...LOOP_TOOL }],
    }),
    followUp: (ask, answer, call, result) => ({
      ...ask,
      input: [
        ...ask.input as unknown[],
        ...answer.output as unknown[],
        { type: "function_call_output", call_id: call.id, output: result },
      ],
    }),
    // Codex keeps the output of the stream's terminal event.
    kept: (events) =>
      JSON.parse(events.findLast((e) => e.event === "response.completed")!.data).response,
  },
};
