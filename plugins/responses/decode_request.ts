/**
 * A Responses client request → IR. Input items become messages: leading system/developer
 * messages and `instructions` the system prompt, later ones mid-conversation system
 * messages; consecutive assistant items (messages, reasoning, calls) one assistant message;
 * consecutive call outputs one tool message. Codex's `additional_tools` item and namespaces
 * flatten into IR tools; its `compaction_trigger` becomes a request for a summary. Hosted
 * tools become IR hosted tools (the target maps, drops or refuses them); server-side state
 * cannot be converted and gets a 400 naming the field.
 */
import { badRequest } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import { openAiEffort, openAiJsonSchema, parseDataUri, urlSource } from "../shared.ts";
import { userLocationOf } from "../hosted.ts";
import { appendReasoning, reasoningText } from "./carrier.ts";
import { COMPACTION_PROMPT, summaryMessage } from "./compaction.ts";
import {
  additionalToolsItem,
  allowedTools,
  compactionItem,
  type Content,
  type ContentPart,
  customTool,
  customToolCallItem,
  filePart,
  functionCallItem,
  functionTool,
  imagePart,
  type InputItem,
  jsonSchemaFormat,
  messageItem,
  namedChoice,
  namespaceTool,
  parseRequest,
  reasoningItem,
  refusalPart,
  type ResponsesRequest,
  textPart,
  type Tool,
  toolOutputItem,
  validated,
} from "./schema.ts";
import type { z } from "zod";

type Of<T extends z.ZodType> = z.infer<T>;
type MediaPart = ir.TextPart | ir.ImagePart | ir.DocumentPart;

export function decodeRequest(body: Record<string, unknown>, model: string): ir.Request {
  const req = parseRequest(body);
  for (const field of ["conversation", "prompt"] as const) {
    if (req[field] == null) continue;
    throw badRequest(
      `${field}: stored ${field}s need the provider's server state; use a passthrough route or send the full input`,
      field,
    );
  }
  const input = new InputDecoder();
  if (req.instructions) input.system.push({ type: "text", text: req.instructions });
  if (typeof req.input === "string") input.messages.push(userText(req.input));
  else {
    const items = req.input ?? [];
    items.forEach((item, i) => input.add(item, `input[${i}]`, i === items.length - 1));
  }

  const tools = new Map<string, ir.Tool>();
  const hosted: ir.HostedTool[] = [];
  addTools(tools, hosted, req.tools ?? [], "tools");
  input.toolLists.forEach(([list, path]) => addTools(tools, hosted, list, path));

  const out: ir.Request = {
    model,
    system: input.system,
    messages: input.messages,
    stream: req.stream ?? false,
  };
  const choice = toolChoiceOf(req.tool_choice, tools, hosted);
  if (tools.size) out.tools = [...tools.values()];
  if (hosted.length) out.hostedTools = hosted;
  if (typeof choice === "string") out.hostedChoice = choice;
  else if (choice) out.toolChoice = choice;
  if (input.compaction) {
    out.compaction = true;
    // The summary must be the only output: no tool calls on a compaction turn.
    if (tools.size) out.toolChoice = { type: "none" };
  }
  setOptions(out, req);
  return out;
}

/** Sampling, limits, reasoning, format and identity fields. */
function setOptions(out: ir.Request, req: ResponsesRequest) {
  if (req.parallel_tool_calls != null) out.parallelToolCalls = req.parallel_tool_calls;
  if (req.max_output_tokens != null) out.maxTokens = req.max_output_tokens;
  if (req.temperature != null) out.temperature = req.temperature;
  if (req.top_p != null) out.topP = req.top_p;
  const reasoning = reasoningOf(req.reasoning);
  if (reasoning) out.reasoning = reasoning;
  const format = req.text?.format;
  if (format) out.responseFormat = formatOf(format);
  if (req.metadata) out.metadata = req.metadata;
  const user = req.safety_identifier ?? req.user;
  if (user) out.user = user;
}

function reasoningOf(r: ResponsesRequest["reasoning"]): ir.Reasoning | undefined {
  if (!r) return undefined;
  const out: ir.Reasoning = {};
  if (r.effort) {
    out.effort = openAiEffort(r.effort, "reasoning.effort");
    if (r.effort === "none") out.disabled = true;
  }
  if (r.summary ?? r.generate_summary) out.includeThoughts = true;
  return Object.keys(out).length ? out : undefined;
}

function formatOf(format: { type?: string }): ir.ResponseFormat {
  switch (format.type) {
    case "text":
    case "json_object":
      return { type: format.type };
    case "json_schema":
      return openAiJsonSchema(validated(format, jsonSchemaFormat));
    default:
      throw badRequest(`text.format.type: unknown format "${format.type}"`, "text.format.type");
  }
}

const userText = (text: string): ir.Message => ({ role: "user", parts: [{ type: "text", text }] });

/** Responses hosted-tool types with a counterpart in another format. */
const HOSTED_KINDS: Record<string, ir.HostedKind> = {
  web_search: "web_search",
  web_search_2025_08_26: "web_search",
  web_search_preview: "web_search",
  web_search_preview_2025_03_11: "web_search",
};

/** A hosted tool declaration as IR: the target maps, drops or refuses it (`planHosted`). */
function hostedTool(t: Record<string, unknown>, path: string): ir.HostedTool {
  const name = String(t.type ?? "");
  const out: ir.HostedTool = { name, field: path };
  const kind = HOSTED_KINDS[name];
  if (!kind) return out;
  out.kind = kind;
  const filters = t.filters as { allowed_domains?: unknown } | null | undefined;
  if (Array.isArray(filters?.allowed_domains) && filters.allowed_domains.length) {
    out.allowedDomains = filters.allowed_domains.map(String);
  }
  const where = userLocationOf(t.user_location);
  if (where) out.userLocation = where;
  if (typeof t.search_context_size === "string") out.contextSize = t.search_context_size;
  return out;
}

/**
 * Adds declared tools by name; a later declaration of a name replaces an earlier one (Codex
 * may repeat its tool list), but the same name in two namespaces has no flat equivalent.
 */
function addTools(
  tools: Map<string, ir.Tool>,
  hosted: ir.HostedTool[],
  list: readonly Tool[],
  path: string,
) {
  list.forEach((t, i) => {
    if (!["function", "custom", "namespace"].includes(t.type ?? "")) {
      return void hosted.push(hostedTool(t, `${path}[${i}]`));
    }
    for (const tool of flattenTool(t, `${path}[${i}]`)) {
      const before = tools.get(tool.name);
      if (before && before.namespace !== tool.namespace) {
        throw badRequest(
          `${path}[${i}]: two tools are named "${tool.name}" (in different namespaces); converted routes need unique tool names`,
          `${path}[${i}]`,
        );
      }
      tools.set(tool.name, tool);
    }
  });
}

/** A declared tool as IR tools (a namespace flattens into its members). */
function flattenTool(t: Tool, path: string, namespace?: string): ir.Tool[] {
  switch (t.type) {
    case "function": {
      const f = validated(t, functionTool);
      return [{
        name: f.name,
        kind: "function",
        ...(f.description && { description: f.description }),
        ...(f.parameters && { parameters: f.parameters }),
        ...(f.strict != null && { strict: f.strict }),
        ...(namespace && { namespace }),
      }];
    }
    case "custom": {
      const c = validated(t, customTool);
      const description = customDescription(c);
      return [{
        name: c.name,
        kind: "custom",
        ...(description && { description }),
        ...(namespace && { namespace }),
      }];
    }
    case "namespace": {
      const ns = validated(t, namespaceTool);
      if (namespace) throw badRequest(`${path}: namespaces cannot nest`, path);
      return ns.tools.flatMap((inner, j) => flattenTool(inner, `${path}.tools[${j}]`, ns.name));
    }
    default:
      throw badRequest(`${path}.type: "${t.type}" tools cannot be nested in a namespace`, path);
  }
}

/**
 * A custom tool's grammar (Codex's apply_patch is a lark grammar) cannot constrain another
 * provider's decoding; it goes into the description so the model still knows the format.
 */
function customDescription(c: Of<typeof customTool>): string | undefined {
  const format = c.format;
  if (!format?.definition || format.type === "text") return c.description ?? undefined;
  const grammar = `The input is free text, not JSON, and must match this ${
    format.syntax ?? "grammar"
  } grammar:\n${format.definition}`;
  return c.description ? `${c.description}\n\n${grammar}` : grammar;
}

/** The IR tool choice, or the name of the hosted tool the client forces. */
function toolChoiceOf(
  choice: ResponsesRequest["tool_choice"],
  tools: Map<string, ir.Tool>,
  hosted: ir.HostedTool[],
): ir.ToolChoice | string | undefined {
  if (choice == null) return undefined;
  if (typeof choice === "string") return { type: choice };
  switch (choice.type) {
    case "function":
    case "custom":
      return { type: "tool", name: validated(choice, namedChoice).name };
    case "allowed_tools": {
      // Restricting the visible tools is what allowed_tools does; the IR says it by omission.
      const allowed = validated(choice, allowedTools);
      const names = new Set(allowed.tools.map((t) => t.name ?? t.type));
      for (const name of tools.keys()) if (!names.has(name)) tools.delete(name);
      const kept = hosted.filter((t) => names.has(t.name));
      hosted.splice(0, hosted.length, ...kept);
      return { type: allowed.mode };
    }
    default: {
      // A hosted tool choice (`{"type":"web_search_preview"}`) names the hosted tool's type.
      const type = choice.type ?? "";
      const kind = HOSTED_KINDS[type];
      const forced = hosted.find((t) => t.name === type || (kind && t.kind === kind));
      if (!forced) {
        throw badRequest(
          `tool_choice: forces the hosted tool "${type}", which tools does not declare`,
          "tool_choice",
        );
      }
      return forced.name;
    }
  }
}

/** Walks input items in order, building the system prompt, messages and tool lists. */
class InputDecoder {
  readonly system: ir.TextPart[] = [];
  readonly messages: ir.Message[] = [];
  /** `additional_tools` items' tool lists, with their paths. */
  readonly toolLists: [Tool[], string][] = [];
  compaction = false;
  /** Call id → tool name (Gemini results need the name). */
  private readonly callNames = new Map<string, string>();

  add(item: InputItem, path: string, isLast: boolean) {
    const type = item.type ?? "message";
    switch (type) {
      case "message":
        return this.message(validated(item, messageItem), path);
      case "function_call": {
        const c = validated(item, functionCallItem);
        return this.call(c.call_id, c.name, c.arguments, "function");
      }
      case "custom_tool_call": {
        const c = validated(item, customToolCallItem);
        return this.call(c.call_id, c.name, c.input, "custom");
      }
      case "function_call_output":
      case "custom_tool_call_output":
        return this.output(validated(item, toolOutputItem), path);
      case "reasoning": {
        const r = validated(item, reasoningItem);
        return appendReasoning(
          this.assistantParts(),
          reasoningText(r.summary, r.content),
          r.encrypted_content,
        );
      }
      case "compaction":
      case "compaction_summary":
        return void this.messages.push(
          summaryMessage(validated(item, compactionItem).encrypted_content, path),
        );
      case "compaction_trigger":
        if (!isLast) {
          throw badRequest(`${path}: compaction_trigger must be the last input item`, path);
        }
        this.compaction = true;
        return void this.messages.push(userText(COMPACTION_PROMPT));
      case "web_search_call":
        // A hosted search of an earlier turn (Codex replays them): its findings are in the
        // answer that follows, and no other vendor can replay the call itself.
        return;
      case "additional_tools":
        return void this.toolLists.push([
          validated(item, additionalToolsItem).tools,
          `${path}.tools`,
        ]);
      case "item_reference":
        // Clients with `store: true` (the AI SDK's default) refer back to the reasoning of the
        // previous response. Converted routes keep no state; reasoning only informs the model,
        // so an unresolvable reasoning reference is skipped. Anything else is content: 400.
        if (typeof item.id === "string" && item.id.startsWith("rs_")) return;
        throw badRequest(
          `${path}: item_reference needs the provider's stored items; send the item itself`,
          path,
        );
      default:
        throw badRequest(
          `${path}.type: "${type}" items cannot be converted to another API format`,
          `${path}.type`,
        );
    }
  }

  private message(m: Of<typeof messageItem>, path: string) {
    const parts = contentParts(m.content, `${path}.content`);
    if (m.role === "user") return void this.messages.push({ role: "user", parts });
    if (m.role === "assistant") return void this.assistantParts().push(...parts);
    const texts = parts.map((p, j) => {
      if (p.type !== "text") {
        throw badRequest(
          `${path}.content[${j}]: ${m.role} messages take text only`,
          `${path}.content[${j}]`,
        );
      }
      return p;
    });
    // Instructions before the conversation are the system prompt; later ones stay in place.
    if (this.messages.length === 0) this.system.push(...texts);
    else this.messages.push({ role: "system", parts: texts });
  }

  /** A call in the history; a custom call's free-text input is its arguments. */
  private call(id: string, name: string, args: string, kind: "function" | "custom") {
    this.callNames.set(id, name);
    this.assistantParts().push({ type: "tool_call", id, name, arguments: args, kind });
  }

  private output(o: Of<typeof toolOutputItem>, path: string) {
    const content = o.output === "" ? [] : contentParts(o.output, `${path}.output`);
    const name = this.callNames.get(o.call_id);
    this.partsOf("tool").push({
      type: "tool_result",
      callId: o.call_id,
      ...(name && { name }),
      content,
    });
  }

  private assistantParts(): ir.Part[] {
    return this.partsOf("assistant");
  }

  /** The parts of the last message if it has `role` (runs merge), else of a new one. */
  private partsOf(role: "assistant" | "tool"): ir.Part[] {
    const last = this.messages.at(-1);
    if (last?.role === role) return last.parts;
    const message: ir.Message = { role, parts: [] };
    this.messages.push(message);
    return message.parts;
  }
}

function contentParts(content: Content, path: string): MediaPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map((p, j) => contentPart(p, `${path}[${j}]`));
}

function contentPart(p: ContentPart, path: string): MediaPart {
  switch (p.type) {
    case "input_text":
    case "output_text":
      return { type: "text", text: validated(p, textPart).text };
    case "refusal":
      return { type: "text", text: validated(p, refusalPart).refusal };
    case "input_image":
      return imageFrom(validated(p, imagePart), path);
    case "input_file":
      return documentFrom(validated(p, filePart), path);
    default:
      throw badRequest(
        `${path}.type: "${p.type}" content cannot be converted to another API format`,
        `${path}.type`,
      );
  }
}

function imageFrom(p: Of<typeof imagePart>, path: string): ir.ImagePart {
  const detail = p.detail ? { detail: p.detail } : {};
  if (p.file_id) {
    return { type: "image", source: { kind: "file_id", fileId: p.file_id }, ...detail };
  }
  if (!p.image_url) throw badRequest(`${path}: input_image needs image_url or file_id`, path);
  return { type: "image", source: urlSource(p.image_url), ...detail };
}

const MEDIA_BY_EXTENSION: Record<string, string> = { pdf: "application/pdf", txt: "text/plain" };

function documentFrom(p: Of<typeof filePart>, path: string): ir.DocumentPart {
  const filename = p.filename ? { filename: p.filename } : {};
  let source: ir.MediaSource;
  if (p.file_id) source = { kind: "file_id", fileId: p.file_id };
  else if (p.file_url) source = { kind: "url", url: p.file_url };
  else if (p.file_data) {
    // Clients send a data URI or bare base64; the latter's type comes from the file name.
    const ext = p.filename?.split(".").pop()?.toLowerCase() ?? "";
    source = {
      kind: "base64",
      ...(parseDataUri(p.file_data) ??
        { mediaType: MEDIA_BY_EXTENSION[ext] ?? "application/pdf", data: p.file_data }),
    };
  } else throw badRequest(`${path}: input_file needs file_data, file_url or file_id`, path);
  return { type: "document", source, ...filename };
}
