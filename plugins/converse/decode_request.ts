/**
 * Ingress: a Converse client request (the AWS SDKs' ConverseCommand / ConverseStreamCommand)
 * to the IR, for a route whose provider speaks another format. What only Bedrock applies
 * (guardrails, prompt management) is refused here; relayed routes take it to Bedrock as sent.
 */
import type * as ir from "../../src/kit/ir.ts";
import { badRequest } from "../../src/kit/errors.ts";
import { readSignature } from "../../src/kit/signature.ts";
import { ATTACHED, readMarked, REDACTED } from "../shared.ts";
import { readThinking } from "../messages/thinking.ts";
import { FAMILY, isObj, type Obj } from "./common.ts";
import {
  type ContentBlock,
  type ConverseRequest,
  type documentBlock,
  type imageBlock,
  parseRequest,
  type reasoningBlock,
  type toolResultBlock,
} from "./schema.ts";
import type { z } from "zod";

const invalid = (path: string, what: string) => badRequest(`${path}: ${what}`, path);

/** Fields only Bedrock itself can apply: refused on a converted route. */
const BEDROCK_ONLY: Record<string, string> = {
  guardrailConfig: "guardrails are applied by Bedrock only",
  promptVariables: "prompt management is Bedrock's own",
};

export function decodeRequest(body: Obj, model: string): ir.Request {
  for (const [field, why] of Object.entries(BEDROCK_ONLY)) {
    if (body[field] !== undefined) throw invalid(field, `${why}; this route converts the request`);
  }
  const req = parseRequest(body);
  const out: ir.Request = {
    model,
    system: decodeSystem(req.system ?? []),
    messages: decodeMessages(req.messages),
    stream: false,
  };
  const config = req.inferenceConfig;
  if (config?.maxTokens !== undefined) out.maxTokens = config.maxTokens;
  if (config?.temperature !== undefined) out.temperature = config.temperature;
  if (config?.topP !== undefined) out.topP = config.topP;
  if (config?.stopSequences?.length) out.stop = config.stopSequences;
  if (req.toolConfig) Object.assign(out, decodeToolConfig(req.toolConfig));
  decodeAdditional(out, req.additionalModelRequestFields ?? {});
  decodeOutputConfig(out, req.outputConfig);
  if (req.requestMetadata && Object.keys(req.requestMetadata).length) {
    const { user, ...metadata } = req.requestMetadata;
    if (user) out.user = user;
    if (Object.keys(metadata).length) out.metadata = metadata;
  }
  // performanceConfig, serviceTier and additionalModelResponseFieldPaths tune or shape what only
  // Bedrock answers: dropped.
  return out;
}

/** A `cachePoint` marks the part before it, in a list of parts (or tools). */
function cacheLast(parts: readonly (ir.Part | ir.Tool)[], cache: { ttl?: string }, path: string) {
  const last = parts.at(-1);
  if (!last || ("type" in last && last.type === "hosted_call")) {
    throw invalid(path, "a cachePoint must follow the content it caches");
  }
  (last as ir.Extensions).cache = cache.ttl === undefined ? {} : { ttl: cache.ttl };
}

function decodeSystem(system: NonNullable<ConverseRequest["system"]>): ir.TextPart[] {
  const parts: ir.TextPart[] = [];
  system.forEach((b, i) => {
    if (typeof b.text === "string") parts.push({ type: "text", text: b.text });
    else if (b.cachePoint) cacheLast(parts, b.cachePoint, `system[${i}].cachePoint`);
    else {throw invalid(
        `system[${i}]`,
        "expected text or cachePoint (guardContent is Bedrock's own)",
      );}
  });
  return parts;
}

/**
 * Converse keeps tool results in user turns; the IR keeps them apart (`tool` messages). Runs of
 * each become one IR message, in order; a foreign signature replayed in an empty reasoning block
 * goes back on the text or tool call before it.
 */
function decodeMessages(messages: ConverseRequest["messages"]): ir.Message[] {
  const out: ir.Message[] = [];
  messages.forEach((m, i) => {
    const push = (role: ir.Role, part: ir.Part) => {
      const last = out.at(-1);
      if (last?.role === role) last.parts.push(part);
      else out.push({ role, parts: [part] });
    };
    m.content.forEach((block, j) => {
      const at = `messages[${i}].content[${j}]`;
      if (block.cachePoint) {
        return cacheLast(out.at(-1)?.parts ?? [], block.cachePoint, `${at}.cachePoint`);
      }
      if (block.toolResult) return push("tool", decodeToolResult(block.toolResult, at));
      const part = decodePart(block, at);
      if (part && !attach(out.at(-1), m.role, part)) push(m.role, part);
    });
  });
  return out;
}

/** Puts a carried signature (an `attached:` reasoning block) on the part before it. */
function attach(last: ir.Message | undefined, role: string, part: ir.Part): boolean {
  const sig = part.type === "thinking" && part.signature &&
    part.signature.family !== FAMILY && readMarked(ATTACHED, part.signature);
  if (!sig) return false;
  const target = last?.role === role ? last.parts.at(-1) : undefined;
  if (target?.type === "text" || target?.type === "tool_call") target.signature = sig;
  return true;
}

const MEMBERS = "text, image, document, toolUse, toolResult, reasoningContent or cachePoint";

function decodePart(block: ContentBlock, path: string): ir.Part | undefined {
  if (typeof block.text === "string") return { type: "text", text: block.text };
  if (block.image) return decodeMedia("image", block.image, `${path}.image`);
  if (block.document) return decodeMedia("document", block.document, `${path}.document`);
  if (block.toolUse) {
    const { toolUseId, name, input } = block.toolUse;
    return { type: "tool_call", id: toolUseId, name, arguments: JSON.stringify(input ?? {}) };
  }
  if (block.reasoningContent) return decodeReasoning(block.reasoningContent, path);
  if (block.citationsContent) {
    const text = (block.citationsContent.content ?? []).map((c) => c.text ?? "").join("");
    return { type: "text", text };
  }
  const member = Object.keys(block)[0];
  throw invalid(
    path,
    member ? `${member} blocks cannot be converted (expected ${MEMBERS})` : `expected ${MEMBERS}`,
  );
}

const decoder = new TextDecoder();

/**
 * Reasoning, signed by the model that wrote it. Redacted reasoning another family made rides
 * in `redactedContent` as the base64 of its marked text (the SDKs read the field as bytes).
 */
function decodeReasoning(r: z.infer<typeof reasoningBlock>, path: string): ir.Part {
  if (r.reasoningText) {
    const part: ir.ThinkingPart = { type: "thinking", text: r.reasoningText.text };
    const signature = r.reasoningText.signature;
    if (signature) part.signature = readSignature(signature, FAMILY);
    return part;
  }
  if (typeof r.redactedContent === "string") {
    const carried = carriedRedaction(r.redactedContent);
    if (carried) return { type: "redacted_thinking", data: carried.value, family: carried.family };
    return { type: "redacted_thinking", data: r.redactedContent, family: FAMILY };
  }
  throw invalid(`${path}.reasoningContent`, "expected reasoningText or redactedContent");
}

/** Another family's redacted reasoning carried in `redactedContent`; undefined for Bedrock's. */
function carriedRedaction(base64: string): ir.Signature | undefined {
  let text: string;
  try {
    text = decoder.decode(Uint8Array.fromBase64(base64));
  } catch {
    return undefined;
  }
  const sig = readSignature(text, FAMILY);
  return sig.family === FAMILY ? undefined : readMarked(REDACTED, sig);
}

const MEDIA_TYPES: Record<string, string> = {
  png: "image/png",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
  csv: "text/csv",
  doc: "application/msword",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xls: "application/vnd.ms-excel",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  html: "text/html",
  txt: "text/plain",
  md: "text/markdown",
};

const encoder = new TextEncoder();

function decodeMedia(
  type: "image" | "document",
  block: z.infer<typeof imageBlock> | z.infer<typeof documentBlock>,
  path: string,
): ir.ImagePart | ir.DocumentPart {
  const { source } = block;
  const format = block.format ?? (source.text !== undefined ? "txt" : undefined);
  const mediaType = format && MEDIA_TYPES[format];
  let irSource: ir.MediaSource;
  if (source.s3Location) irSource = { kind: "url", url: source.s3Location.uri };
  else if (!mediaType) throw invalid(`${path}.format`, `unknown format ${JSON.stringify(format)}`);
  else if (source.bytes !== undefined) irSource = { kind: "base64", mediaType, data: source.bytes };
  else if (source.text !== undefined) {
    irSource = { kind: "base64", mediaType, data: encoder.encode(source.text).toBase64() };
  } else throw invalid(`${path}.source`, "expected bytes, text or s3Location");
  if (type === "image") return { type: "image", source: irSource };
  const name = (block as z.infer<typeof documentBlock>).name;
  return { type: "document", source: irSource, filename: name };
}

function decodeToolResult(block: z.infer<typeof toolResultBlock>, path: string): ir.ToolResultPart {
  const content = block.content.map((c, k): ir.TextPart | ir.ImagePart | ir.DocumentPart => {
    const at = `${path}.toolResult.content[${k}]`;
    if (typeof c.text === "string") return { type: "text", text: c.text };
    if (c.json !== undefined) return { type: "text", text: JSON.stringify(c.json) };
    if (c.image) return decodeMedia("image", c.image, `${at}.image`);
    if (c.document) return decodeMedia("document", c.document, `${at}.document`);
    throw invalid(at, "expected text, json, image or document");
  });
  const part: ir.ToolResultPart = { type: "tool_result", callId: block.toolUseId, content };
  if (block.status === "error") part.isError = true;
  return part;
}

function decodeToolConfig(config: NonNullable<ConverseRequest["toolConfig"]>) {
  const out: Pick<ir.Request, "tools" | "hostedTools" | "toolChoice"> = {};
  const tools: ir.Tool[] = [];
  const hosted: ir.HostedTool[] = [];
  config.tools.forEach((t, i) => {
    const at = `toolConfig.tools[${i}]`;
    if (t.toolSpec) {
      const { name, description, inputSchema, strict } = t.toolSpec;
      tools.push({
        name,
        parameters: inputSchema.json,
        ...(description && { description }),
        ...(strict !== undefined && { strict }),
      });
    } else if (t.systemTool) {
      // A model's own tool (Nova's grounding): no other vendor has it; the target decides.
      hosted.push({ name: t.systemTool.name, field: at });
    } else if (t.cachePoint) cacheLast(tools, t.cachePoint, `${at}.cachePoint`);
    else throw invalid(at, "expected toolSpec, systemTool or cachePoint");
  });
  if (tools.length) out.tools = tools;
  if (hosted.length) out.hostedTools = hosted;
  const choice = config.toolChoice;
  if (choice?.auto) out.toolChoice = { type: "auto" };
  else if (choice?.any) out.toolChoice = { type: "required" };
  else if (choice?.tool) out.toolChoice = { type: "tool", name: choice.tool.name };
  else if (choice) throw invalid("toolConfig.toolChoice", "expected auto, any or tool");
  return out;
}

const EFFORTS = new Set<string>(["low", "medium", "high", "xhigh", "max"]);

/**
 * `additionalModelRequestFields`: what a model takes beyond Converse's own fields. Claude's
 * `thinking`, `top_k` and `anthropic_beta` (dropped: betas tune Anthropic's API only) and Nova
 * 2's `reasoningConfig` and `inferenceConfig.topK` have IR counterparts; another field is a
 * model's own, which no other vendor takes.
 */
function decodeAdditional(out: ir.Request, fields: Obj) {
  for (const [key, value] of Object.entries(fields)) {
    const at = `additionalModelRequestFields.${key}`;
    switch (key) {
      case "thinking":
        decodeClaudeThinking(out, value, at);
        break;
      case "reasoningConfig":
        decodeNovaReasoning(out, value, at);
        break;
      case "top_k":
        if (typeof value !== "number") throw invalid(at, "expected a number");
        out.topK = value;
        break;
      case "inferenceConfig": {
        const topK = isObj(value) ? value.topK : undefined;
        if (typeof topK !== "number") throw invalid(`${at}.topK`, "expected a number");
        out.topK = topK;
        break;
      }
      case "anthropic_beta":
        break;
      default:
        throw invalid(at, "a model's own field cannot be converted for this route");
    }
  }
}

function decodeClaudeThinking(out: ir.Request, value: unknown, at: string) {
  if (!isObj(value)) throw invalid(at, "expected an object");
  const reasoning: ir.Reasoning = { ...out.reasoning };
  readThinking(value, at, reasoning);
  out.reasoning = reasoning;
}

const NOVA_EFFORTS: Record<string, ir.Effort> = { low: "low", medium: "medium", high: "high" };

function decodeNovaReasoning(out: ir.Request, value: unknown, at: string) {
  if (!isObj(value)) throw invalid(at, "expected an object");
  if (value.type === "disabled") {
    out.reasoning = { ...out.reasoning, disabled: true };
    return;
  }
  if (value.type !== "enabled") throw invalid(`${at}.type`, "expected enabled or disabled");
  const effort = NOVA_EFFORTS[String(value.maxReasoningEffort ?? "medium")];
  if (!effort) throw invalid(`${at}.maxReasoningEffort`, "expected low, medium or high");
  out.reasoning = { ...out.reasoning, effort, includeThoughts: true };
}

function decodeOutputConfig(out: ir.Request, config: ConverseRequest["outputConfig"]) {
  if (config?.effort !== undefined) {
    if (!EFFORTS.has(config.effort)) {
      throw invalid("outputConfig.effort", "expected low, medium, high, xhigh or max");
    }
    out.reasoning = { ...out.reasoning, effort: config.effort as ir.Effort };
  }
  const format = config?.textFormat;
  if (!format) return;
  const jsonSchema = format.structure.jsonSchema;
  if (format.type !== "json_schema" || !jsonSchema) {
    throw invalid("outputConfig.textFormat", "expected a json_schema format");
  }
  let schema: unknown;
  try {
    schema = JSON.parse(jsonSchema.schema);
  } catch {
    throw invalid("outputConfig.textFormat.structure.jsonSchema.schema", "not JSON text");
  }
  if (!isObj(schema)) {
    throw invalid("outputConfig.textFormat.structure.jsonSchema.schema", "expected a JSON object");
  }
  out.responseFormat = {
    type: "json_schema",
    schema,
    ...(jsonSchema.name && { name: jsonSchema.name }),
    ...(jsonSchema.description && { description: jsonSchema.description }),
  };
}
