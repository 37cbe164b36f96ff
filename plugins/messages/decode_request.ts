/** Ingress: an Anthropic Messages client request to the IR. */
import type * as ir from "../../src/kit/ir.ts";
import type { z } from "zod";
import { badRequest } from "../../src/kit/errors.ts";
import { readSignature } from "../../src/kit/signature.ts";
import { userLocationOf } from "../hosted.ts";
import { FAMILY, readAttached, readCache } from "./common.ts";
import { readThinking } from "./thinking.ts";
import {
  type documentBlock,
  type imageBlock,
  type MessagesRequest,
  type midConversationSystemBlock,
  parseRequest,
  type redactedThinkingBlock,
  type textBlock,
  type thinkingBlock,
  type toolResultBlock,
  type toolUseBlock,
} from "./schema.ts";

type Block = { type: string } & Record<string, unknown>;
type TextBlock = z.infer<typeof textBlock>;
type MediaBlock = z.infer<typeof imageBlock> | z.infer<typeof documentBlock>;
type ToolParam = NonNullable<MessagesRequest["tools"]>[number];

const invalid = (path: string, what: string) => badRequest(`${path}: ${what}`, path);

export function decodeRequest(body: Record<string, unknown>, model: string): ir.Request {
  const req = parseRequest(body);
  if (req.mcp_servers?.length) {
    throw invalid("mcp_servers", "MCP servers are only available on an Anthropic upstream");
  }
  const out: ir.Request = {
    model,
    system: decodeSystem(req.system),
    messages: req.messages.flatMap((m, i) => decodeMessage(m.role, m.content, `messages[${i}]`)),
    maxTokens: req.max_tokens,
    stream: req.stream === true,
  };
  const hosted: ir.HostedTool[] = [];
  const tools = decodeTools(req.tools ?? [], hosted);
  if (tools.length) out.tools = tools;
  if (hosted.length) out.hostedTools = hosted;
  if (req.tool_choice) Object.assign(out, decodeToolChoice(req.tool_choice, hosted));
  const reasoning = decodeReasoning(req);
  if (reasoning) out.reasoning = reasoning;
  const format = req.output_config?.format;
  if (format) out.responseFormat = decodeFormat(format);
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.topP = req.top_p;
  if (req.top_k !== undefined) out.topK = req.top_k;
  if (req.stop_sequences?.length) out.stop = req.stop_sequences;
  if (req.metadata?.user_id) out.user = req.metadata.user_id;
  readCache(out, req);
  // context_management, service_tier, container and inference_geo are advisory: dropped.
  return out;
}

function textPart(block: TextBlock): ir.TextPart {
  const part: ir.TextPart = { type: "text", text: block.text };
  readCache(part, block);
  return part;
}

function decodeSystem(system: MessagesRequest["system"]): ir.TextPart[] {
  if (system === undefined) return [];
  return typeof system === "string" ? [{ type: "text", text: system }] : system.map(textPart);
}

const asBlocks = (content: string | Block[]): Block[] =>
  typeof content === "string" ? [{ type: "text", text: content }] : content;

/** Text blocks of a system entry (a `role:"system"` message or a `mid_conv_system` block). */
function systemParts(content: string | Block[], path: string): ir.TextPart[] {
  return asBlocks(content).map((b, j) => {
    if (b.type !== "text") throw invalid(`${path}[${j}].type`, "expected text in a system entry");
    return textPart(b as TextBlock);
  });
}

/**
 * One Anthropic message can hold what the IR keeps apart: tool results (IR `tool` role),
 * mid-conversation system blocks and ordinary content. Runs of each become one IR message,
 * in order.
 */
function decodeMessage(role: string, content: string | Block[], path: string): ir.Message[] {
  if (role === "system") {
    return [{ role: "system", parts: systemParts(content, `${path}.content`) }];
  }
  if (role !== "user" && role !== "assistant") {
    throw invalid(`${path}.role`, "expected user, assistant or system");
  }
  const messages: ir.Message[] = [];
  const push = (msgRole: ir.Role, parts: ir.Part[]) => {
    const last = messages.at(-1);
    if (last?.role === msgRole) last.parts.push(...parts);
    else messages.push({ role: msgRole, parts });
  };
  asBlocks(content).forEach((block, j) => {
    const at = `${path}.content[${j}]`;
    if (SERVER_RUN.test(block.type)) return;
    if (block.type === "tool_result") push("tool", [decodeToolResult(block, at)]);
    else if (block.type === "mid_conv_system") {
      const system = block as z.infer<typeof midConversationSystemBlock>;
      push("system", systemParts(system.content, `${at}.content`));
    } else {
      const part = decodePart(block, at);
      if (!attachCarrier(messages.at(-1), role, part)) push(role, [part]);
    }
  });
  return messages;
}

/**
 * Puts a signature replayed in a carrier block (see `attachedSignatureBlocks`) back on the
 * text or tool call before it. Returns whether the part was such a carrier.
 */
function attachCarrier(last: ir.Message | undefined, role: string, part: ir.Part): boolean {
  const sig = part.type === "thinking" && part.signature && readAttached(part.signature);
  if (!sig) return false;
  const target = last?.role === role ? last.parts.at(-1) : undefined;
  if (target?.type === "text" || target?.type === "tool_call") target.signature = sig;
  return true;
}

/** Blocks only an Anthropic upstream understands (server tools and their results). */
const SERVER_BLOCK = /^(server_tool_use|.*_tool_result|container_upload|search_result)$/;

/**
 * Server-tool runs of earlier turns (`server_tool_use` and its `*_tool_result`): their findings
 * are in the text that follows, and no other vendor can replay the run itself, so they are
 * left out of the converted history (thinking blocks around them keep their order).
 */
const SERVER_RUN = /^(server_tool_use|(?!tool_result$).*_tool_result)$/;

function decodePart(block: Block, path: string): ir.Part {
  switch (block.type) {
    case "text":
      return textPart(block as TextBlock);
    case "image":
    case "document":
      return decodeMedia(block as MediaBlock, path);
    case "tool_use":
      return decodeToolUse(block as z.infer<typeof toolUseBlock>);
    case "thinking":
      return decodeThinking(block as z.infer<typeof thinkingBlock>);
    case "redacted_thinking": {
      const sig = readSignature((block as z.infer<typeof redactedThinkingBlock>).data, FAMILY);
      return { type: "redacted_thinking", data: sig.value, family: sig.family };
    }
  }
  const what = SERVER_BLOCK.test(block.type)
    ? `${block.type} blocks are only available on an Anthropic upstream`
    : `unsupported content block type ${block.type}`;
  throw invalid(`${path}.type`, what);
}

function decodeToolUse(block: z.infer<typeof toolUseBlock>): ir.ToolCallPart {
  const part: ir.ToolCallPart = {
    type: "tool_call",
    id: block.id,
    name: block.name,
    arguments: JSON.stringify(block.input),
  };
  readCache(part, block);
  return part;
}

function decodeThinking(block: z.infer<typeof thinkingBlock>): ir.ThinkingPart {
  const part: ir.ThinkingPart = { type: "thinking", text: block.thinking };
  if (block.signature) part.signature = readSignature(block.signature, FAMILY);
  return part;
}

/** Anthropic plain-text documents carry raw text; the IR keeps every source as base64. */
const utf8ToBase64 = (text: string) =>
  btoa(Array.from(new TextEncoder().encode(text), (b) => String.fromCharCode(b)).join(""));

function decodeSource(source: Record<string, unknown>, path: string): ir.MediaSource {
  switch (source.type) {
    case "base64":
      return { kind: "base64", mediaType: String(source.media_type), data: String(source.data) };
    case "text":
      return {
        kind: "base64",
        mediaType: String(source.media_type ?? "text/plain"),
        data: utf8ToBase64(String(source.data)),
      };
    case "url":
      return { kind: "url", url: String(source.url) };
    case "file":
      return { kind: "file_id", fileId: String(source.file_id) };
  }
  throw invalid(`${path}.type`, `unsupported source type ${source.type}`);
}

function decodeMedia(block: MediaBlock, path: string): ir.ImagePart | ir.DocumentPart {
  const source = decodeSource(block.source, `${path}.source`);
  const part: ir.ImagePart | ir.DocumentPart = block.type === "image"
    ? { type: "image", source }
    : { type: "document", source, ...(block.title ? { filename: block.title } : {}) };
  readCache(part, block);
  return part;
}

function decodeToolResult(block: Block, path: string): ir.ToolResultPart {
  const result = block as z.infer<typeof toolResultBlock>;
  const content = asBlocks(result.content ?? []).map((b, k) => {
    const at = `${path}.content[${k}]`;
    if (b.type === "text") return textPart(b as TextBlock);
    if (b.type === "image" || b.type === "document") return decodeMedia(b as MediaBlock, at);
    throw invalid(`${at}.type`, `${b.type} blocks in tool results are not supported`);
  });
  const part: ir.ToolResultPart = { type: "tool_result", callId: result.tool_use_id, content };
  if (result.is_error) part.isError = true;
  readCache(part, result);
  return part;
}

/**
 * Tool search only defers loading definitions; on a converted route every tool is simply
 * loaded up front, so the search tool goes and `defer_loading` is ignored.
 */
const TOOL_SEARCH = /^tool_search_tool_/;

/** Function tools; server tools (a versioned `type`) go to `hosted` under the name they call. */
function decodeTools(tools: ToolParam[], hosted: ir.HostedTool[]): ir.Tool[] {
  return tools.flatMap((t, i) => {
    if (TOOL_SEARCH.test(t.type ?? "")) return [];
    if (t.type && t.type !== "custom") {
      hosted.push({ ...hostedTool(t, `tools[${i}]`), name: t.name });
      return [];
    }
    return [decodeTool(t, `tools[${i}]`)];
  });
}

/** Versioned Anthropic tool types with a counterpart in another format. */
const HOSTED_KINDS: [RegExp, ir.HostedKind][] = [
  [/^web_search_\d+$/, "web_search"],
  [/^web_fetch_\d+$/, "web_fetch"],
];

/** A server tool (any versioned `type`) as an IR hosted tool; the target decides its fate. */
function hostedTool(tool: ToolParam, path: string): ir.HostedTool {
  const t = tool as ToolParam & Record<string, unknown>;
  const out: ir.HostedTool = { name: String(tool.type), field: path };
  const kind = HOSTED_KINDS.find(([re]) => re.test(String(tool.type)))?.[1];
  if (!kind) return out;
  out.kind = kind;
  if (typeof t.max_uses === "number") out.maxUses = t.max_uses;
  const domains = (v: unknown) => Array.isArray(v) && v.length ? v.map(String) : undefined;
  const allowed = domains(t.allowed_domains);
  const blocked = domains(t.blocked_domains);
  if (allowed) out.allowedDomains = allowed;
  if (blocked) out.blockedDomains = blocked;
  const where = userLocationOf(t.user_location);
  if (where) out.userLocation = where;
  return out;
}

function decodeTool(tool: ToolParam, path: string): ir.Tool {
  if (!tool.input_schema) throw invalid(`${path}.input_schema`, "required");
  const out: ir.Tool = { name: tool.name, parameters: tool.input_schema };
  const description = describeTool(tool);
  if (description) out.description = description;
  if (tool.strict !== undefined) out.strict = tool.strict;
  readCache(out, tool);
  // eager_input_streaming only changes how input streams from Anthropic: dropped.
  return out;
}

/** `input_examples` steer the model; other formats only have the description to carry them. */
function describeTool(tool: ToolParam): string | undefined {
  if (!tool.input_examples?.length) return tool.description;
  const examples = tool.input_examples.map((e) => JSON.stringify(e)).join("\n");
  return `${tool.description ?? ""}\n\nInput examples:\n${examples}`.trimStart();
}

function decodeToolChoice(
  choice: NonNullable<MessagesRequest["tool_choice"]>,
  hosted: ir.HostedTool[],
) {
  const out: Pick<ir.Request, "toolChoice" | "hostedChoice" | "parallelToolCalls"> = {};
  switch (choice.type) {
    case "auto":
      out.toolChoice = { type: "auto" };
      break;
    case "any":
      out.toolChoice = { type: "required" };
      break;
    case "none":
      out.toolChoice = { type: "none" };
      break;
    case "tool":
      if (!choice.name) throw invalid("tool_choice.name", "required");
      // Claude Code's WebSearch forces the server tool by its name (`web_search`).
      if (hosted.some((t) => t.name === choice.name)) out.hostedChoice = choice.name;
      else out.toolChoice = { type: "tool", name: choice.name };
      break;
    default:
      throw invalid("tool_choice.type", "expected auto, any, tool or none");
  }
  if (choice.disable_parallel_tool_use) out.parallelToolCalls = false;
  return out;
}

const EFFORTS = new Set<string>(["low", "medium", "high", "xhigh", "max"]);

function decodeReasoning(req: MessagesRequest): ir.Reasoning | undefined {
  const thinking = req.thinking;
  const effort = req.output_config?.effort;
  if (!thinking && !effort) return undefined;
  const out: ir.Reasoning = {};
  if (effort) {
    if (!EFFORTS.has(effort)) {
      throw invalid("output_config.effort", "expected low, medium, high, xhigh or max");
    }
    out.effort = effort as ir.Effort;
  }
  if (thinking) readThinking(thinking, "thinking", out);
  return out;
}

function decodeFormat(
  format: NonNullable<NonNullable<MessagesRequest["output_config"]>["format"]>,
): ir.ResponseFormat {
  if (format.type !== "json_schema") {
    throw invalid("output_config.format.type", "expected json_schema");
  }
  if (!format.schema) throw invalid("output_config.format.schema", "required");
  return { type: "json_schema", schema: format.schema };
}
