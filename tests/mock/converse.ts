/**
 * Amazon Bedrock's Converse format, rendered from the same vendor-neutral reply as the other
 * formats: `output.message.content[]` with `reasoningContent`, `text`, `toolUse`; the stream
 * is messageStart, contentBlock{Start,Delta,Stop}, messageStop, metadata (framed as AWS event
 * stream by bedrock.ts). Errors come from bedrock.ts too (the platform's envelope).
 */
import { type Block, claudeMinTokens, type Prompt, ttlOf } from "./prompt_cache.ts";
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

/** Bedrock's refusal of a `cachePoint` sent to a model without prompt caching. */
export const UNSUPPORTED_CACHING = "You invoked an unsupported model, or your request did not " +
  "allow prompt caching. See the documentation for more information.";

/** Bedrock's refusal of a `cachePoint` right after a reasoning block. */
export const CACHE_POINT_AFTER_REASONING = "Cache point cannot be inserted after reasoning " +
  "block. Please remove the invalid cache point and try again.";

/** How a model takes `cachePoint` blocks: Claude anywhere, Nova not among tools, others none. */
function cachingOf(model: string) {
  if (/anthropic|claude/i.test(model)) return { tools: true, minTokens: claudeMinTokens(model) };
  if (/amazon\.nova/i.test(model)) return { tools: false, minTokens: 1000 };
  return undefined;
}

/**
 * The prompt in Converse's prefix order: `toolConfig.tools`, `system`, then each message's
 * content; a `cachePoint` marks the element before it. Refused as Bedrock refuses it: a cache
 * point for a model without caching, among Nova's tools, after a reasoning block, or a fifth.
 */
function conversePrompt(body: Json, model: string): Prompt | string {
  const caching = cachingOf(model);
  const blocks: Block[] = [];
  let points = 0;
  const read = (items: unknown, at: string, salt?: string): string | undefined => {
    for (const [k, item] of arrayOf(items).entries()) {
      if (!item?.cachePoint) {
        blocks.push({ text: JSON.stringify(item), at: `${at}/${k}`, ...(salt && { salt }) });
        salt = undefined;
        continue;
      }
      points++;
      if (!caching) return UNSUPPORTED_CACHING;
      if (at.startsWith("#/toolConfig") && !caching.tools) {
        return `Malformed input request: ${at}/${k}: extraneous key [cachePoint] is not ` +
          "permitted, please reformat your input and try again.";
      }
      const before = blocks.at(-1);
      if (before === undefined) continue;
      if (JSON.parse(before.text).reasoningContent) return CACHE_POINT_AFTER_REASONING;
      before.marker = ttlOf(item.cachePoint.ttl);
    }
  };
  const choice = `toolChoice=${JSON.stringify(body.toolConfig?.toolChoice ?? null)}`;
  const thinking = `thinking=${JSON.stringify(body.additionalModelRequestFields ?? null)}`;
  const problem = read(body.toolConfig?.tools, "#/toolConfig/tools") ??
    read(body.system, "#/system", choice) ??
    arrayOf(body.messages).map((m, i) =>
      read(m?.content, `#/messages/${i}/content`, `${i}:${m?.role}|${i ? "" : thinking}`)
    ).find((p) => p !== undefined);
  if (problem) return problem;
  if (points > 4) {
    return `The number of cache points (${points}) exceeds the maximum of 4 per request.`;
  }
  return { kind: "explicit", blocks, minTokens: caching?.minTokens ?? Infinity };
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
  prompt: conversePrompt,
  json: (reply: Reply) => ({
    output: { message: { role: "assistant", content: content(reply) } },
    stopReason: stopReason(reply),
    usage: converseUsage(reply.usage),
    metrics: { latencyMs: 42 },
  }),
  events,
};
