/** Upstream: the IR to an Anthropic Messages request body. */
import type * as ir from "../../src/kit/ir.ts";
import type { EncodeContext } from "../../src/kit/codec.ts";
import { unsupported } from "../../src/kit/errors.ts";
import { signatureFor } from "../../src/kit/signature.ts";
import {
  argumentsObject,
  CUSTOM_TOOL_SCHEMA,
  mediaSource,
  rejectInexpressible,
} from "../shared.ts";
import { dropOptions, type HostedPlan, planHosted } from "../hosted.ts";
import { cacheControl, FAMILY, type Obj, toolUseId } from "./common.ts";
import { encodeSampling, encodeThinking } from "./thinking.ts";

type Role = "user" | "assistant";
const defined = <T>(x: T | undefined): x is T => x !== undefined;
interface Turn {
  role: Role;
  content: Obj[];
}

export function encodeRequest(req: ir.Request, ctx: EncodeContext): Obj {
  rejectInexpressible(req, ctx);
  // Anthropic runs web search and web fetch alongside function tools.
  const hosted = planHosted(req, ctx, (t) => t.kind !== undefined);
  const thinking = encodeThinking(req, ctx, hosted.forced !== undefined, FAMILY);
  const body: Obj = {
    model: ctx.model,
    max_tokens: thinking?.maxTokens ?? req.maxTokens ?? ctx.defaultMaxTokens,
  };
  const system = encodeSystem(req);
  if (system.length) body.system = system;
  body.messages = encodeMessages(req.messages, ctx);
  if (thinking) body.thinking = thinking.config;
  const outputConfig = encodeOutputConfig(req, thinking?.effort);
  if (outputConfig) body.output_config = outputConfig;
  if (req.tools?.length || hosted.tools.length) {
    const server = hosted.tools.map((t) => serverTool(t, ctx));
    body.tools = [...(req.tools ?? []).map(encodeTool), ...server];
    const choice = encodeToolChoice(req, hosted);
    if (choice) body.tool_choice = choice;
  }
  Object.assign(
    body,
    encodeSampling(req, thinking !== undefined && !thinking.disabled, ctx.dropped),
  );
  if (req.stop?.length) body.stop_sequences = req.stop;
  if (req.seed !== undefined) ctx.dropped?.push("seed");
  // `metadata.user_id` is Anthropic's only metadata key; other metadata is dropped.
  if (req.user) body.metadata = { user_id: req.user };
  if (req.cache) body.cache_control = cacheControl(req.cache);
  if (req.stream) body.stream = true;
  return body;
}

function textBlock(part: ir.TextPart): Obj {
  const block: Obj = { type: "text", text: part.text };
  if (part.cache) block.cache_control = cacheControl(part.cache);
  return block;
}

/** Top-level system blocks plus every mid-conversation system/developer message, in order. */
function encodeSystem(req: ir.Request): Obj[] {
  const midConversation = req.messages.filter((m) => m.role === "system").flatMap((m) => m.parts);
  return [...req.system, ...midConversation]
    .filter((p): p is ir.TextPart => p.type === "text" && p.text !== "")
    .map(textBlock);
}

/**
 * Anthropic alternates user and assistant turns: tool results join the next user turn (first,
 * as Anthropic requires), consecutive same-role turns merge, and empty turns vanish.
 */
function encodeMessages(messages: ir.Message[], ctx: EncodeContext): Obj[] {
  const turns: Turn[] = [];
  messages.forEach((m, i) => {
    if (m.role === "system") return;
    const role: Role = m.role === "assistant" ? "assistant" : "user";
    const content = m.parts.map((p) => encodePart(p, ctx, `messages[${i}]`)).filter(defined);
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...content);
    else turns.push({ role, content });
  });
  return turns.filter((t) => t.content.length).map((t) => ({
    role: t.role,
    content: t.role === "user" ? toolResultsFirst(t.content) : t.content,
  }));
}

const toolResultsFirst = (content: Obj[]) => [
  ...content.filter((b) => b.type === "tool_result"),
  ...content.filter((b) => b.type !== "tool_result"),
];

function encodePart(part: ir.Part, ctx: EncodeContext, path: string): Obj | undefined {
  switch (part.type) {
    case "text":
      // Anthropic rejects empty text blocks; Gemini text signatures have no slot here.
      return part.text ? textBlock(part) : undefined;
    case "image":
    case "document":
      return encodeMedia(part, ctx, path);
    case "audio":
      throw unsupported(path, ctx.route, "audio input cannot be expressed");
    case "tool_call":
      return withCache({
        type: "tool_use",
        id: toolUseId(part.id),
        name: part.name,
        input: argumentsObject(part),
      }, part);
    case "tool_result":
      return encodeToolResult(part, ctx, path);
    case "thinking": {
      // Thinking is replayed only with a signature Anthropic itself issued.
      const signature = signatureFor(part.signature, FAMILY);
      return signature ? { type: "thinking", thinking: part.text, signature } : undefined;
    }
    case "redacted_thinking":
      return part.family === FAMILY ? { type: "redacted_thinking", data: part.data } : undefined;
    case "hosted_call":
      return undefined; // a hosted run of another vendor cannot be replayed here
  }
}

function withCache(block: Obj, part: ir.Extensions): Obj {
  if (part.cache) block.cache_control = cacheControl(part.cache);
  return block;
}

function encodeToolResult(part: ir.ToolResultPart, ctx: EncodeContext, path: string): Obj {
  const block: Obj = { type: "tool_result", tool_use_id: toolUseId(part.callId) };
  const content = part.content.map((p) => encodePart(p, ctx, path)).filter(defined);
  if (content.length) block.content = content;
  if (part.isError) block.is_error = true;
  return withCache(block, part);
}

const base64ToUtf8 = (data: string) =>
  new TextDecoder().decode(Uint8Array.from(atob(data), (c) => c.charCodeAt(0)));

function encodeMedia(part: ir.ImagePart | ir.DocumentPart, ctx: EncodeContext, path: string): Obj {
  const source = mediaSource(part, ctx, path);
  const block: Obj = { type: part.type, source: encodeSource(part, source, ctx, path) };
  if (part.type === "document" && part.filename) block.title = part.filename;
  return withCache(block, part);
}

function encodeSource(
  part: ir.ImagePart | ir.DocumentPart,
  source: Exclude<ir.MediaSource, { kind: "file_id" }>,
  ctx: EncodeContext,
  path: string,
): Obj {
  if (source.kind === "url") return { type: "url", url: source.url };
  if (part.type === "document" && source.mediaType.startsWith("text/")) {
    return { type: "text", media_type: "text/plain", data: base64ToUtf8(source.data) };
  }
  if (part.type === "document" && source.mediaType !== "application/pdf") {
    throw unsupported(path, ctx.route, `documents of type ${source.mediaType} cannot be expressed`);
  }
  return { type: "base64", media_type: source.mediaType, data: source.data };
}

function encodeTool(tool: ir.Tool): Obj {
  const schema = tool.kind === "custom" ? CUSTOM_TOOL_SCHEMA : tool.parameters ?? {};
  // Anthropic requires an object schema; parameterless functions often send none.
  const out: Obj = { name: tool.name };
  if (tool.description) out.description = tool.description;
  out.input_schema = { type: "object", properties: {}, ...schema };
  if (tool.strict !== undefined) out.strict = tool.strict;
  return withCache(out, tool);
}

/** Anthropic's name and versioned type for each hosted kind. */
const SERVER_TOOLS: Record<ir.HostedKind, { name: string; type: string }> = {
  web_search: { name: "web_search", type: "web_search_20250305" },
  web_fetch: { name: "web_fetch", type: "web_fetch_20250910" },
};

function serverTool(t: ir.HostedTool, ctx: EncodeContext): Obj {
  dropOptions(t, ctx, t.kind === "web_fetch" ? ["userLocation", "contextSize"] : ["contextSize"]);
  const out: Obj = { ...SERVER_TOOLS[t.kind!] };
  if (t.maxUses !== undefined) out.max_uses = t.maxUses;
  if (t.allowedDomains) out.allowed_domains = t.allowedDomains;
  if (t.blockedDomains) out.blocked_domains = t.blockedDomains;
  if (t.userLocation && t.kind === "web_search") {
    out.user_location = { type: "approximate", ...t.userLocation };
  }
  return out;
}

function encodeToolChoice(req: ir.Request, hosted: HostedPlan): Obj | undefined {
  if (hosted.forced) {
    const forced = { type: "tool", name: SERVER_TOOLS[hosted.forced.kind!].name };
    return req.parallelToolCalls === false
      ? { ...forced, disable_parallel_tool_use: true }
      : forced;
  }
  const choice = req.toolChoice;
  if (choice?.type === "none") return { type: "none" };
  const out: Obj | undefined = choice?.type === "required"
    ? { type: "any" }
    : choice?.type === "tool"
    ? { type: "tool", name: choice.name }
    : choice
    ? { type: "auto" }
    : undefined;
  if (req.parallelToolCalls !== false) return out;
  return { ...(out ?? { type: "auto" }), disable_parallel_tool_use: true };
}

function encodeOutputConfig(req: ir.Request, effort: string | undefined): Obj | undefined {
  const out: Obj = {};
  if (effort) out.effort = effort;
  const format = req.responseFormat;
  if (format?.type === "json_schema") out.format = { type: "json_schema", schema: format.schema };
  return Object.keys(out).length ? out : undefined;
}
