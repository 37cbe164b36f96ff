/**
 * Amazon Bedrock's Converse format, rendered from the same vendor-neutral reply as the other
 * formats: `output.message.content[]` with `reasoningContent`, `text`, `toolUse`; the stream
 * is messageStart, contentBlock{Start,Delta,Stop}, messageStop, metadata (framed as AWS event
 * stream by bedrock.ts). Errors come from bedrock.ts too (the platform's envelope).
 */
import { pieces, type Reply, signature, type Usage } from "./scenario.ts";
import { arrayOf, type Json } from "./vendor.ts";
import type { WireEvent } from "./wire.ts";

const textOfBlocks = (content: unknown) =>
  arrayOf(content).map((b) => typeof b?.text === "string" ? b.text : "").join("");

/** A `toolResult` block's content as text (`text` blocks, `json` blocks serialised). */
function toolResultText(block: Json): string {
  return arrayOf(block.toolResult?.content)
    .map((c) => typeof c?.text === "string" ? c.text : c?.json ? JSON.stringify(c.json) : "")
    .join("");
}

/** Converse's `inputTokens` excludes cache reads and writes, like Anthropic's. */
function converseUsage(u: Usage) {
  const inputTokens = u.input - u.cacheRead - u.cacheWrite;
  return {
    inputTokens,
    outputTokens: u.output,
    totalTokens: u.input + u.output,
    cacheReadInputTokens: u.cacheRead,
    cacheWriteInputTokens: u.cacheWrite,
  };
}

const toolUseId = () => `tooluse_${crypto.randomUUID().replaceAll("-", "").slice(0, 22)}`;
const stopReason = (reply: Reply) => reply.finish ?? (reply.toolCall ? "tool_use" : "end_turn");

function content(reply: Reply): Json[] {
  const blocks: Json[] = [];
  if (reply.reasoning) {
    const sig = signature("reasoning", reply.model);
    blocks.push({ reasoningContent: { reasoningText: { text: reply.reasoning, signature: sig } } });
  }
  if (reply.text !== undefined) blocks.push({ text: reply.text });
  if (reply.toolCall) {
    const { name, arguments: args } = reply.toolCall;
    blocks.push({ toolUse: { toolUseId: toolUseId(), name, input: JSON.parse(args) } });
  }
  return blocks;
}

function events(reply: Reply): WireEvent[] {
  const event = (name: string, data: Json, delta = false): WireEvent => ({
    event: name,
    data,
    delta,
  });
  const blocks: WireEvent[][] = [];
  if (reply.reasoning) {
    const sig = signature("reasoning", reply.model);
    blocks.push([
      ...pieces(reply.reasoning, 3).map((text) =>
        event("contentBlockDelta", { delta: { reasoningContent: { text } } }, true)
      ),
      event("contentBlockDelta", { delta: { reasoningContent: { signature: sig } } }),
    ]);
  }
  if (reply.text !== undefined) {
    blocks.push(
      pieces(reply.text, reply.textPieces).map((text) =>
        event("contentBlockDelta", { delta: { text } }, true)
      ),
    );
  }
  if (reply.toolCall) {
    const { name, arguments: args } = reply.toolCall;
    blocks.push([
      event("contentBlockStart", { start: { toolUse: { toolUseId: toolUseId(), name } } }),
      ...pieces(args, 2).map((input) =>
        event("contentBlockDelta", { delta: { toolUse: { input } } }, true)
      ),
    ]);
  }
  const indexed = blocks.flatMap((block, contentBlockIndex) => [
    ...block.map((e) => ({ ...e, data: { contentBlockIndex, ...(e.data as Json) } })),
    event("contentBlockStop", { contentBlockIndex }),
  ]);
  return [
    event("messageStart", { role: "assistant" }),
    ...indexed,
    event("messageStop", { stopReason: stopReason(reply) }),
    event("metadata", { usage: converseUsage(reply.usage), metrics: { latencyMs: 42 } }),
  ];
}

/** The Converse body parts of a vendor (bedrock.ts adds the platform's errors and headers). */
export const converseFormat = {
  name: "converse",
  jsonContentType: "application/json",
  turn(body: Json) {
    const turns = arrayOf(body.messages);
    const userText = textOfBlocks(turns.findLast((m) => m?.role === "user")?.content);
    const last = turns.at(-1);
    const result = last?.role === "user"
      ? arrayOf(last.content).findLast((b) => b?.toolResult)
      : undefined;
    return result ? { userText, toolResult: toolResultText(result) } : { userText };
  },
  toolNames: (body: Json) =>
    arrayOf(body.toolConfig?.tools).map((t) => t?.toolSpec?.name).filter(Boolean),
  hostedSearch: () => undefined,
  validate(body: Json) {
    if (!Array.isArray(body.messages)) {
      return "1 validation error detected: Value null at 'messages' failed to satisfy " +
        "constraint: Member must not be null";
    }
    if (body.messages[0]?.role !== "user") {
      return "A conversation must start with a user message. Try again with a conversation " +
        "that starts with a user message.";
    }
  },
  json: (reply: Reply) => ({
    output: { message: { role: "assistant", content: content(reply) } },
    stopReason: stopReason(reply),
    usage: converseUsage(reply.usage),
    metrics: { latencyMs: 42 },
  }),
  events,
};
