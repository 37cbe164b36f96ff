/** Upstream: the IR to a Bedrock Converse / ConverseStream request body. */
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
import { planHosted } from "../hosted.ts";
import { toolUseId } from "../messages/common.ts";
import { encodeSampling, encodeThinking } from "../messages/thinking.ts";
import { FAMILY, isClaude, type Obj } from "./common.ts";
import { isNova2, novaReasoningConfig } from "./nova.ts";

type Role = "user" | "assistant";
interface Turn {
  role: Role;
  content: Obj[];
}

export function encodeRequest(req: ir.Request, ctx: EncodeContext): Obj {
  rejectInexpressible(req, ctx);
  // Converse's only server-side tools are model-specific system tools: no hosted kind maps.
  planHosted(req, ctx, () => false);
  const claude = isClaude(ctx.model);
  const thinking = claude ? encodeThinking(req, ctx, false, FAMILY) : undefined;
  const nova = isNova2(ctx.model);
  const reasoningConfig = nova ? novaReasoningConfig(req.reasoning) : undefined;
  if (req.reasoning && !claude && !nova && !req.reasoning.disabled) ctx.dropped?.push("reasoning");
  const body: Obj = {};
  const system = encodeSystem(req);
  if (system.length) body.system = system;
  body.messages = encodeMessages(req, ctx);
  const inference = encodeInference(req, thinking?.maxTokens, thinking && !thinking.disabled, ctx);
  if (Object.keys(inference.config).length) body.inferenceConfig = inference.config;
  const additional: Obj = { ...inference.additional };
  if (thinking) additional.thinking = thinking.config;
  if (reasoningConfig) additional.reasoningConfig = reasoningConfig;
  if (Object.keys(additional).length) body.additionalModelRequestFields = additional;
  const output = encodeOutputConfig(req, thinking?.effort);
  if (output) body.outputConfig = output;
  const tools = encodeToolConfig(req, ctx);
  if (tools) body.toolConfig = tools;
  const metadata = { ...req.metadata, ...(req.user ? { user: req.user } : {}) };
  if (Object.keys(metadata).length) body.requestMetadata = metadata;
  return body;
}

/** A cache breakpoint is a `cachePoint` block right after what it covers. */
function cachePoint(cache: ir.CacheBreakpoint | undefined): Obj[] {
  if (!cache) return [];
  return [{ cachePoint: { type: "default", ...(cache.ttl ? { ttl: cache.ttl } : {}) } }];
}

const withCache = (block: Obj, part: ir.Extensions): Obj[] => [block, ...cachePoint(part.cache)];

/** Top-level system blocks plus every mid-conversation system/developer message, in order. */
function encodeSystem(req: ir.Request): Obj[] {
  const midConversation = req.messages.filter((m) => m.role === "system").flatMap((m) => m.parts);
  return [...req.system, ...midConversation]
    .filter((p): p is ir.TextPart => p.type === "text" && p.text !== "")
    .flatMap((p) => withCache({ text: p.text }, p));
}

/**
 * Converse alternates user and assistant turns and starts with a user turn: tool results join
 * the next user turn (first), consecutive same-role turns merge, empty turns vanish.
 */
function encodeMessages(req: ir.Request, ctx: EncodeContext): Obj[] {
  const turns: Turn[] = [];
  req.messages.forEach((m, i) => {
    if (m.role === "system") return;
    const role: Role = m.role === "assistant" ? "assistant" : "user";
    const content = m.parts.flatMap((p) => encodePart(p, ctx, `messages[${i}]`));
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...content);
    else turns.push({ role, content });
  });
  const out = turns.filter((t) => t.content.length).map((t) => ({
    role: t.role,
    content: t.role === "user" ? toolResultsFirst(t.content) : t.content,
  }));
  const last = out.at(-1);
  if (req.cache && last) last.content.push(...cachePoint(req.cache));
  return out;
}

const toolResultsFirst = (content: Obj[]) => [
  ...content.filter((b) => b.toolResult),
  ...content.filter((b) => !b.toolResult),
];

function encodePart(part: ir.Part, ctx: EncodeContext, path: string): Obj[] {
  switch (part.type) {
    case "text":
      // Converse refuses blank text blocks.
      return part.text ? withCache({ text: part.text }, part) : [];
    case "image":
    case "document":
      return withCache(encodeMedia(part, ctx, path), part);
    case "audio":
      return [{ audio: { format: part.format, source: { bytes: part.data } } }];
    case "tool_call":
      return withCache({
        toolUse: { toolUseId: toolUseId(part.id), name: part.name, input: argumentsObject(part) },
      }, part);
    case "tool_result":
      return withCache(encodeToolResult(part, ctx, path), part);
    case "thinking": {
      // Reasoning is replayed only with a signature Converse itself issued.
      const signature = signatureFor(part.signature, FAMILY);
      return signature
        ? [{ reasoningContent: { reasoningText: { text: part.text, signature } } }]
        : [];
    }
    case "redacted_thinking":
      return part.family === FAMILY ? [{ reasoningContent: { redactedContent: part.data } }] : [];
    case "hosted_call":
      return []; // a hosted run of another vendor cannot be replayed here
  }
}

function encodeToolResult(part: ir.ToolResultPart, ctx: EncodeContext, path: string): Obj {
  const content = part.content.flatMap((p) => encodePart(p, ctx, path))
    .filter((b) => !b.cachePoint);
  // Converse requires content; an empty result is an empty text.
  const block: Obj = {
    toolUseId: toolUseId(part.callId),
    content: content.length ? content : [{ text: "" }],
  };
  if (part.isError) block.status = "error";
  return { toolResult: block };
}

const IMAGE_FORMATS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/gif": "gif",
  "image/webp": "webp",
};

const DOCUMENT_FORMATS: Record<string, string> = {
  "application/pdf": "pdf",
  "text/csv": "csv",
  "application/msword": "doc",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.ms-excel": "xls",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "text/html": "html",
  "text/plain": "txt",
  "text/markdown": "md",
};

/**
 * Converse takes media as bytes (base64 in JSON) or an `s3://` location; web URLs and other
 * providers' file ids have no slot.
 */
function encodeMedia(part: ir.ImagePart | ir.DocumentPart, ctx: EncodeContext, path: string) {
  const source = mediaSource(part, ctx, path);
  const isS3 = source.kind === "url" && source.url.startsWith("s3://");
  if (source.kind === "url" && !isS3) {
    throw unsupported(
      path,
      ctx.route,
      "media by web URL cannot be expressed (base64 or s3:// only)",
    );
  }
  const mediaType = source.kind === "base64" ? source.mediaType : mediaTypeOfPath(source.url);
  const formats = part.type === "image" ? IMAGE_FORMATS : DOCUMENT_FORMATS;
  const format = formats[mediaType];
  if (!format) {
    throw unsupported(
      path,
      ctx.route,
      `${part.type}s of type ${mediaType || "unknown"} cannot be expressed`,
    );
  }
  const wire = source.kind === "base64"
    ? { bytes: source.data }
    : { s3Location: { uri: source.url } };
  if (part.type === "image") return { image: { format, source: wire } };
  return { document: { format, name: documentName(part.filename, format), source: wire } };
}

const EXTENSION_TYPES: Record<string, string> = Object.fromEntries(
  [...Object.entries(IMAGE_FORMATS), ...Object.entries(DOCUMENT_FORMATS)]
    .map(([type, ext]) => [ext, type]),
);

/** An `s3://…/name.ext` object's media type, from its extension. */
const mediaTypeOfPath = (uri: string) =>
  EXTENSION_TYPES[uri.split(".").at(-1)?.toLowerCase() ?? ""] ?? "";

/** Converse document names allow letters, digits, single spaces, `-`, `()` and `[]`. */
function documentName(filename: string | undefined, format: string): string {
  const base = (filename ?? "").replace(/\.[^.]*$/, "").replace(/[^A-Za-z0-9\s\-()[\]]/g, "-")
    .replace(/\s+/g, " ").trim();
  return base || `document-${format}`;
}

function encodeTool(tool: ir.Tool): Obj[] {
  const schema = tool.kind === "custom" ? CUSTOM_TOOL_SCHEMA : tool.parameters ?? {};
  const spec: Obj = { name: tool.name };
  if (tool.description) spec.description = tool.description;
  spec.inputSchema = { json: { type: "object", properties: {}, ...schema } };
  if (tool.strict !== undefined) spec.strict = tool.strict;
  return withCache({ toolSpec: spec }, tool);
}

/** Whether the conversation holds tool blocks (Converse then requires `toolConfig`). */
const hasToolBlocks = (req: ir.Request) =>
  req.messages.some((m) => m.parts.some((p) => p.type === "tool_call" || p.type === "tool_result"));

/**
 * Tools and the choice among them. Converse has no "none": such a request goes without its
 * tools, unless the history holds tool blocks (which need the tools declared): then it is
 * refused rather than letting the model call a tool the client forbade.
 */
function encodeToolConfig(req: ir.Request, ctx: EncodeContext): Obj | undefined {
  if (!req.tools?.length) return undefined;
  const choice = req.toolChoice;
  if (choice?.type === "none") {
    if (!hasToolBlocks(req)) return undefined;
    throw unsupported(
      "tool_choice",
      ctx.route,
      'tool_choice "none" with tool calls in the conversation cannot be expressed',
    );
  }
  if (req.parallelToolCalls === false) ctx.dropped?.push("parallel_tool_calls");
  const config: Obj = { tools: req.tools.flatMap(encodeTool) };
  if (choice?.type === "required") config.toolChoice = { any: {} };
  else if (choice?.type === "tool") config.toolChoice = { tool: { name: choice.name } };
  else if (choice?.type === "auto") config.toolChoice = { auto: {} };
  return config;
}

/**
 * `inferenceConfig` (max tokens, temperature, top P, stop sequences) and what only Claude
 * takes through `additionalModelRequestFields` (`top_k`). With thinking on, Claude's rules for
 * sampling hints hold (messages/thinking.ts).
 */
function encodeInference(
  req: ir.Request,
  thinkingMaxTokens: number | undefined,
  thinking: boolean | undefined,
  ctx: EncodeContext,
): { config: Obj; additional: Obj } {
  const sampling = encodeSampling(req, thinking === true, ctx.dropped);
  const config: Obj = {};
  const maxTokens = thinkingMaxTokens ?? req.maxTokens;
  if (maxTokens !== undefined) config.maxTokens = maxTokens;
  if (sampling.temperature !== undefined) config.temperature = sampling.temperature;
  if (sampling.top_p !== undefined) config.topP = sampling.top_p;
  if (req.stop?.length) config.stopSequences = req.stop;
  if (req.seed !== undefined) ctx.dropped?.push("seed");
  const additional: Obj = {};
  if (sampling.top_k !== undefined) {
    if (isClaude(ctx.model)) additional.top_k = sampling.top_k;
    else ctx.dropped?.push("top_k");
  }
  return { config, additional };
}

function encodeOutputConfig(req: ir.Request, effort: string | undefined): Obj | undefined {
  const out: Obj = {};
  if (effort) out.effort = effort;
  const format = req.responseFormat;
  if (format?.type === "json_schema") {
    const jsonSchema: Obj = { schema: JSON.stringify(format.schema) };
    if (format.name) jsonSchema.name = format.name;
    if (format.description) jsonSchema.description = format.description;
    out.textFormat = { type: "json_schema", structure: { jsonSchema } };
  }
  return Object.keys(out).length ? out : undefined;
}
