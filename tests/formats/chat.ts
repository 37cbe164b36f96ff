/** Test side of `chat` (OpenAI chat completions). */
import type { FormatSide } from "../formats.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import { bodies, LOOP_TOOL, openaiHeaders } from "../requests.ts";

type Obj = Record<string, unknown>;

/**
 * The message a client assembles from its stream's deltas: content and reasoning
 * concatenated, tool calls by index (with a signature in `extra_content`), and the
 * `thinking_blocks` (signatures) as they come.
 */
function assembled(events: SseEvent[]): Obj {
  const message = { role: "assistant", content: "", reasoning_content: "" } as Obj & {
    content: string;
    reasoning_content: string;
    tool_calls?: {
      id: string;
      type: string;
      function: { name: string; arguments: string };
      extra_content?: unknown;
    }[];
    thinking_blocks?: unknown[];
  };
  for (const e of events) {
    if (!e.data.startsWith("{")) continue; // [DONE]
    const delta = JSON.parse(e.data).choices?.[0]?.delta;
    if (!delta) continue;
    message.content += delta.content ?? "";
    message.reasoning_content += delta.reasoning_content ?? "";
    if (delta.thinking_blocks) (message.thinking_blocks ??= []).push(...delta.thinking_blocks);
    for (const call of delta.tool_calls ?? []) {
      const calls = message.tool_calls ??= [];
      calls[call.index] ??= {
        id: call.id,
        type: "function",
        function: { name: "", arguments: "" },
      };
      calls[call.index].function.name += call.function?.name ?? "";
      calls[call.index].function.arguments += call.function?.arguments ?? "";
      // Gemini's thought signature rides on its call.
      if (call.extra_content) calls[call.index].extra_content = call.extra_content;
    }
  }
  return { choices: [{ message }] };
}

export const side: FormatSide = {
  providerBase: "/v1",
  client: {
    path: () => "/v1/chat/completions",
    headers: openaiHeaders,
    body: bodies.chat,
    rich: {
      messages: [
        { role: "system", content: "s" },
        {
          role: "user",
          content: [{ type: "text", text: "hi" }, {
            type: "image_url",
            image_url: { url: "data:image/png;base64,AAAA" },
          }],
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: "r" },
      ],
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
      tool_choice: "auto",
      max_tokens: 10,
      temperature: 0.5,
      stop: ["x"],
    },
  },
  mock: {
    provider: "oai-chat",
    routes: [{ models: ["chat-*"] }, { models: ["renamed-*"], model: "chat-text-renamed" }],
    relayModel: "chat-text",
    // Streams ask for usage: relayed, chat reports it only then.
    body: (model, stream) => ({
      ...bodies.chat(model, stream),
      ...(stream && { stream_options: { include_usage: true } }),
    }),
  },
  loop: {
    ask: (model, stream, question) => ({
      model,
      stream,
      ...(stream && { stream_options: { include_usage: true } }),
      messages: [{ role: "user", content: question }],
      tools: [{ type: "function", function: LOOP_TOOL }],
    }),
    followUp: (ask, answer, call, result) => ({
      ...ask,
      messages: [
        ...ask.messages as Obj[],
        (answer.choices as { message: unknown }[])[0].message,
        { role: "tool", tool_call_id: call.id, content: result },
      ],
    }),
    kept: assembled,
  },
};
