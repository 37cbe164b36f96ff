/** A chat client's request → IR (ingress). */
import type { z } from "zod";
import { badRequest } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import { openAiEffort, openAiJsonSchema, parseDataUri, urlSource } from "../shared.ts";
import {
  type allowedTools,
  type AssistantMessage,
  type audioPart,
  type ChatMessage,
  type ChatRequest,
  type ChatTool,
  type customTool,
  type filePart,
  type functionTool,
  type imagePart,
  type jsonSchemaFormat,
  parseRequest,
  type redactedThinkingBlock,
  type refusalPart,
  type textPart,
  type thinkingBlock,
  type ToolChoice,
} from "./schema.ts";
import { userLocationOf } from "../hosted.ts";
import { thinkingBlockToIr, toolCallToIr } from "./wire.ts";

type Part = { type: string } & Record<string, unknown>;
type Content = string | Part[];

/** Part types each role may carry (the schema lets unknown types through for passthrough). */
const TEXT_ONLY = ["text"];
const USER_PARTS = ["text", "image_url", "input_audio", "file"];
const ASSISTANT_PARTS = ["text", "refusal"];

export function decodeRequest(raw: Record<string, unknown>, model: string): ir.Request {
  const body = parseRequest(raw);
  rejectInexpressible(body);
  const { system, messages } = decodeMessages(body.messages);
  const { tools, toolChoice } = decodeTools(body.tools ?? undefined, body.tool_choice ?? undefined);
  return {
    model,
    system,
    messages,
    tools,
    toolChoice,
    parallelToolCalls: body.parallel_tool_calls ?? undefined,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    stop: typeof body.stop === "string" ? [body.stop] : body.stop ?? undefined,
    seed: body.seed ?? undefined,
    presencePenalty: body.presence_penalty ?? undefined,
    frequencyPenalty: body.frequency_penalty ?? undefined,
    n: body.n ?? undefined,
    reasoning: decodeEffort(body.reasoning_effort ?? undefined),
    responseFormat: decodeResponseFormat(body.response_format ?? undefined),
    user: body.safety_identifier ?? body.user ?? undefined,
    metadata: body.metadata ?? undefined,
    stream: body.stream === true,
    streamUsage: body.stream_options?.include_usage ?? undefined,
    hostedTools: webSearch(body.web_search_options),
  };
}

/**
 * `web_search_options` (search models) is chat's hosted web search: the target runs its own
 * (docs/hosted-tools.md), answering with citations that come back as `annotations`.
 */
function webSearch(
  options: Record<string, unknown> | null | undefined,
): ir.HostedTool[] | undefined {
  if (!options) return undefined;
  const tool: ir.HostedTool = {
    kind: "web_search",
    name: "web_search_options",
    field: "web_search_options",
  };
  const where = userLocationOf((options.user_location as { approximate?: unknown })?.approximate);
  if (where) tool.userLocation = where;
  if (typeof options.search_context_size === "string") {
    tool.contextSize = options.search_context_size;
  }
  return [tool];
}

/**
 * A 400 for what changes the output but has no IR slot, so no other format can carry it.
 * (Same-format routes are passthrough and never decode.)
 */
const inexpressible = (field: string, what: string) =>
  badRequest(`${field}: ${what} cannot be converted to another API format`, field);

function rejectInexpressible(body: ChatRequest) {
  if (body.logit_bias && Object.keys(body.logit_bias).length > 0) {
    throw inexpressible("logit_bias", "token biases");
  }
  if (body.modalities?.includes("audio") || body.audio) {
    throw inexpressible("audio", "audio output");
  }
  if (body.verbosity && body.verbosity !== "medium") {
    throw inexpressible("verbosity", "a verbosity other than medium");
  }
  if (body.functions) throw inexpressible("functions", "the deprecated functions API (use tools)");
  if (body.function_call !== undefined && body.function_call !== null) {
    throw inexpressible("function_call", "the deprecated functions API (use tool_choice)");
  }
}

// ---- messages ----

function decodeMessages(list: ChatMessage[]): { system: ir.TextPart[]; messages: ir.Message[] } {
  const system: ir.TextPart[] = [];
  const messages: ir.Message[] = [];
  // Gemini needs a tool result's function name; chat only links results by id.
  const toolNames = new Map<string, string>();
  list.forEach((m, i) => {
    const path = `messages[${i}]`;
    switch (m.role) {
      case "system":
      case "developer": {
        const parts = decodeContent(m.content, `${path}.content`, TEXT_ONLY) as ir.TextPart[];
        // Leading instructions are the system prompt; later ones keep their place.
        if (messages.length === 0) system.push(...parts);
        else messages.push({ role: "system", parts });
        return;
      }
      case "user":
        messages.push({
          role: "user",
          parts: decodeContent(m.content, `${path}.content`, USER_PARTS),
        });
        return;
      case "assistant":
        messages.push({ role: "assistant", parts: decodeAssistant(m, path, toolNames) });
        return;
      case "tool": {
        const content = decodeContent(m.content, `${path}.content`, TEXT_ONLY) as ir.TextPart[];
        const result: ir.ToolResultPart = { type: "tool_result", callId: m.tool_call_id, content };
        const name = toolNames.get(m.tool_call_id);
        if (name) result.name = name;
        appendToolResult(messages, result);
        return;
      }
      case "function":
        throw inexpressible(`${path}.role`, "the deprecated function role (use tool messages)");
    }
  });
  return { system, messages };
}

/** Consecutive tool messages answer one assistant turn: keep them in one IR message. */
function appendToolResult(messages: ir.Message[], part: ir.ToolResultPart) {
  const last = messages.at(-1);
  if (last?.role === "tool") last.parts.push(part);
  else messages.push({ role: "tool", parts: [part] });
}

function decodeContent(content: Content, path: string, allowed: readonly string[]): ir.Part[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map((p, j) => {
    if (!allowed.includes(p.type)) {
      throw badRequest(
        `${path}[${j}].type: expected one of ${allowed.join(", ")} (got "${p.type}")`,
        `${path}[${j}].type`,
      );
    }
    return decodePart(p, `${path}[${j}]`);
  });
}

/** One part of a type the role allows. */
function decodePart(part: Part, path: string): ir.Part {
  switch (part.type) {
    case "text": {
      const p = part as z.infer<typeof textPart>;
      return withBreakpoint<ir.TextPart>({ type: "text", text: p.text }, p);
    }
    case "image_url": {
      const p = part as z.infer<typeof imagePart>;
      const image: ir.ImagePart = { type: "image", source: urlSource(p.image_url.url) };
      if (p.image_url.detail) image.detail = p.image_url.detail;
      return withBreakpoint(image, p);
    }
    case "input_audio": {
      const p = part as z.infer<typeof audioPart>;
      return { type: "audio", data: p.input_audio.data, format: p.input_audio.format };
    }
    case "file":
      return decodeFile(part as z.infer<typeof filePart>, path);
    default: // "refusal", the one other type a role allows
      return { type: "text", text: (part as z.infer<typeof refusalPart>).refusal };
  }
}

/** Chat's explicit cache breakpoint, at the provider's default lifetime. */
function withBreakpoint<T extends ir.Extensions>(
  part: T,
  wire: { prompt_cache_breakpoint?: unknown },
) {
  if (wire.prompt_cache_breakpoint) part.cache = {};
  return part;
}

function decodeFile(part: z.infer<typeof filePart>, path: string): ir.DocumentPart {
  const { file_data, file_id, filename } = part.file;
  let source: ir.MediaSource;
  if (file_data) {
    // Some clients send bare base64 with a filename; PDF is the only file type chat accepts.
    const inline = parseDataUri(file_data) ?? { mediaType: "application/pdf", data: file_data };
    source = { kind: "base64", ...inline };
  } else if (file_id) {
    source = { kind: "file_id", fileId: file_id };
  } else {
    throw badRequest(`${path}.file: expected file_data or file_id`, `${path}.file`);
  }
  const doc: ir.DocumentPart = { type: "document", source };
  if (filename) doc.filename = filename;
  return withBreakpoint(doc, part);
}

function decodeAssistant(
  m: AssistantMessage,
  path: string,
  toolNames: Map<string, string>,
): ir.Part[] {
  if (m.audio) {
    throw inexpressible(`${path}.audio`, "audio replies");
  }
  const parts: ir.Part[] = decodeThinking(m);
  if (m.content) {
    const content = decodeContent(m.content, `${path}.content`, ASSISTANT_PARTS);
    parts.push(...content.filter(nonEmptyText));
  }
  if (m.refusal) parts.push({ type: "text", text: m.refusal });
  (m.tool_calls ?? []).forEach((call, j) => {
    const part = decodeToolCall(call, `${path}.tool_calls[${j}]`);
    toolNames.set(part.id, part.name);
    parts.push(part);
  });
  return parts;
}

const nonEmptyText = (p: ir.Part) => p.type !== "text" || p.text !== "";

/** `thinking_blocks` (signed, from this gateway or LiteLLM) win over plain `reasoning_content`. */
function decodeThinking(m: AssistantMessage): ir.Part[] {
  if (m.thinking_blocks?.length) {
    return m.thinking_blocks.map((b) =>
      thinkingBlockToIr(
        b as z.infer<typeof thinkingBlock> | z.infer<typeof redactedThinkingBlock>,
      )
    );
  }
  return m.reasoning_content ? [{ type: "thinking", text: m.reasoning_content }] : [];
}

function decodeToolCall(call: Part, path: string): ir.ToolCallPart {
  const part = toolCallToIr(call);
  if (part) return part;
  throw inexpressible(`${path}.type`, `tool call type "${call.type}"`);
}

// ---- tools ----

function decodeTools(
  list: ChatTool[] | undefined,
  choice: ToolChoice | undefined,
): { tools?: ir.Tool[]; toolChoice?: ir.ToolChoice } {
  let tools = list?.map((t, i) => decodeTool(t, `tools[${i}]`));
  if (choice === undefined) return { tools };
  if (typeof choice === "string") return { tools, toolChoice: { type: choice } };
  switch (choice.type) {
    case "function":
    case "custom": {
      const named = (choice as Record<string, { name: string }>)[choice.type];
      return { tools, toolChoice: { type: "tool", name: named.name } };
    }
    case "allowed_tools": {
      // Offering only the allowed subset constrains the model exactly as allowed_tools does.
      const { mode, tools: allowed } = (choice as z.infer<typeof allowedTools>).allowed_tools;
      const names = new Set(allowed.map((t) => t.function?.name ?? t.custom?.name));
      tools = tools?.filter((t) => names.has(t.name));
      return { tools, toolChoice: { type: mode } };
    }
    default:
      throw inexpressible("tool_choice.type", `tool_choice "${choice.type}"`);
  }
}

function decodeTool(tool: ChatTool, path: string): ir.Tool {
  if (tool.type === "function") {
    const { function: f } = tool as z.infer<typeof functionTool>;
    const out: ir.Tool = { name: f.name };
    if (f.description) out.description = f.description;
    if (f.parameters) out.parameters = f.parameters;
    if (typeof f.strict === "boolean") out.strict = f.strict;
    return out;
  }
  if (tool.type === "custom") {
    const { custom } = tool as z.infer<typeof customTool>;
    if (custom.format && custom.format.type !== "text") {
      throw inexpressible(`${path}.custom.format`, "grammar-constrained custom tools");
    }
    const out: ir.Tool = { name: custom.name, kind: "custom" };
    if (custom.description) out.description = custom.description;
    return out;
  }
  throw inexpressible(`${path}.type`, `tool type "${tool.type}"`);
}

// ---- generation settings ----

function decodeEffort(effort: string | undefined): ir.Reasoning | undefined {
  if (effort === undefined) return undefined;
  const e = openAiEffort(effort, "reasoning_effort");
  return e === "none" ? { effort: e, disabled: true } : { effort: e };
}

function decodeResponseFormat(
  format: { type: string } | undefined,
): ir.ResponseFormat | undefined {
  if (!format) return undefined;
  switch (format.type) {
    case "text":
    case "json_object":
      return { type: format.type };
    case "json_schema":
      return openAiJsonSchema((format as z.infer<typeof jsonSchemaFormat>).json_schema);
    default:
      throw inexpressible("response_format.type", `response_format "${format.type}"`);
  }
}
