/** Test side of `messages` (Anthropic Messages). */
import type { FormatSide } from "../formats.ts";
import { anthropicHeaders, bodies, LOOP_TOOL } from "../requests.ts";

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: () => "/v1/messages",
    headers: anthropicHeaders,
    body: bodies.messages,
    rich: {
      max_tokens: 100,
      system: [{ type: "text", text: "s" }],
      messages: [
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "r" }] },
      ],
      tools: [{ name: "f", input_schema: { type: "object" } }],
      tool_choice: { type: "auto" },
      thinking: { type: "enabled", budget_tokens: 2000 },
    },
  },
  mock: { provider: "anthropic", routes: [{ models: ["msg-*"] }], relayModel: "msg-text" },
  loop: {
    ask: (model, stream, question) => ({
      model,
      stream,
      max_tokens: 1024,
      messages: [{ role: "user", content: question }],
      tools: [{
        name: LOOP_TOOL.name,
        description: LOOP_TOOL.description,
        input_schema: LOOP_TOOL.parameters,
      }],
    }),
    followUp: (ask, answer, call, result) => ({
      ...ask,
      messages: [
        ...ask.messages as unknown[],
        { role: "assistant", content: answer.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: result }] },
      ],
    }),
  },
};
