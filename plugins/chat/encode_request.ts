/** IR → an upstream Chat Completions request. */
import type { EncodeContext } from "../../src/kit/codec.ts";
import { unsupported } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import { signatureFor } from "../../src/kit/signature.ts";
import { dataUri, TOOL_ERROR_PREFIX } from "../shared.ts";
import { FAMILY, type Obj, signatureExtra, toolCallFromIr } from "./wire.ts";
import { planHosted } from "../hosted.ts";

/** Said in a tool message whose images/documents had to move to the next user message. */
export const MOVED_MEDIA_NOTE = "[attachments follow in the next user message]";

export function encodeRequest(req: ir.Request, ctx: EncodeContext): Obj {
  rejectInexpressible(req, ctx);
  const body: Obj = {
    model: ctx.model,
    messages: encodeMessages(req, ctx),
    max_completion_tokens: req.maxTokens,
    temperature: req.temperature,
    top_p: req.topP,
    stop: req.stop,
    seed: req.seed,
    presence_penalty: req.presencePenalty,
    frequency_penalty: req.frequencyPenalty,
    reasoning_effort: effortFor(req.reasoning),
    response_format: req.responseFormat && encodeResponseFormat(req.responseFormat),
    user: req.user,
  };
  // Chat Completions providers run no hosted tools: dropped and reported (or a 400 when the
  // request has no other tools).
  planHosted(req, ctx, () => false);
  // Chat refuses tool_choice and parallel_tool_calls without tools.
  if (req.tools?.length) {
    body.tools = req.tools.map(encodeTool);
    body.tool_choice = req.toolChoice && encodeToolChoice(req.toolChoice, req.tools);
    body.parallel_tool_calls = req.parallelToolCalls;
  }
  // The stream's usage arrives only when asked for, in a last chunk before [DONE].
  if (req.stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  return body;
}

function rejectInexpressible(req: ir.Request, ctx: EncodeContext) {
  if (req.topK !== undefined) ctx.dropped?.push("top_k");
  // One choice per response is all the IR (and every other format) can carry back.
  if ((req.n ?? 1) > 1) {
    throw unsupported("n", ctx.route, "n > 1 (several choices) is not supported");
  }
}

// ---- messages ----

function encodeMessages(req: ir.Request, ctx: EncodeContext): Obj[] {
  const out: Obj[] = [];
  if (req.system.length) out.push({ role: "system", content: joinText(req.system) });
  req.messages.forEach((m, i) => out.push(...encodeMessage(m, `messages[${i}]`, ctx)));
  return out;
}

const joinText = (parts: ir.TextPart[], separator = "\n\n") =>
  parts.map((p) => p.text).join(separator);

function encodeMessage(m: ir.Message, path: string, ctx: EncodeContext): Obj[] {
  switch (m.role) {
    case "system":
      return [{ role: "system", content: joinText(systemText(m.parts, path, ctx)) }];
    case "assistant":
      return encodeAssistant(m.parts, path, ctx);
    case "user":
    case "tool":
      return encodeUserTurn(m.parts, path, ctx);
  }
}

function systemText(parts: ir.Part[], path: string, ctx: EncodeContext) {
  parts.forEach((p, j) => {
    if (p.type !== "text") {
      throw unsupported(
        `${path}.content[${j}]`,
        ctx.route,
        `${p.type} parts in system messages are not supported`,
      );
    }
  });
  return parts as ir.TextPart[];
}

/**
 * A user turn may hold tool results (Anthropic, Gemini): each becomes a `tool` message, and
 * what a tool message cannot hold (images, documents) plus the turn's own parts follow in
 * one user message, after all the tool messages the assistant turn requires.
 */
function encodeUserTurn(parts: ir.Part[], path: string, ctx: EncodeContext): Obj[] {
  const toolMessages: Obj[] = [];
  const userParts: Obj[] = [];
  parts.forEach((p, j) => {
    const at = `${path}.content[${j}]`;
    if (p.type !== "tool_result") return userParts.push(encodeUserPart(p, at, ctx));
    const media = p.content.filter((c) => c.type !== "text");
    toolMessages.push({
      role: "tool",
      tool_call_id: p.callId,
      content: toolResultText(p, media.length > 0),
    });
    userParts.push(...media.map((c, k) => encodeUserPart(c, `${at}.content[${k}]`, ctx)));
  });
  if (userParts.length === 0) return toolMessages;
  return [...toolMessages, { role: "user", content: compactContent(userParts) }];
}

function toolResultText(p: ir.ToolResultPart, movedMedia: boolean): string {
  const texts = p.content.filter((c): c is ir.TextPart => c.type === "text").map((c) => c.text);
  if (movedMedia) texts.push(MOVED_MEDIA_NOTE);
  const text = texts.join("\n");
  return p.isError ? TOOL_ERROR_PREFIX + text : text;
}

/** A lone text part goes as a plain string, which every chat-compatible server accepts. */
function compactContent(parts: Obj[]): string | Obj[] {
  return parts.length === 1 && parts[0].type === "text" ? parts[0].text as string : parts;
}

function encodeUserPart(p: ir.Part, path: string, ctx: EncodeContext): Obj {
  switch (p.type) {
    case "text":
      return { type: "text", text: p.text };
    case "image":
      return encodeImage(p, path, ctx);
    case "document":
      return encodeDocument(p, path, ctx);
    case "audio":
      return { type: "input_audio", input_audio: { data: p.data, format: p.format } };
    default:
      throw unsupported(path, ctx.route, `${p.type} parts in user messages are not supported`);
  }
}

function encodeImage(p: ir.ImagePart, path: string, ctx: EncodeContext): Obj {
  if (p.source.kind === "file_id") {
    throw unsupported(path, ctx.route, "image file ids are not supported");
  }
  const url = p.source.kind === "url" ? p.source.url : dataUri(p.source.mediaType, p.source.data);
  return { type: "image_url", image_url: p.detail ? { url, detail: p.detail } : { url } };
}

function encodeDocument(p: ir.DocumentPart, path: string, ctx: EncodeContext): Obj {
  const file: Obj = {};
  if (p.source.kind === "url") {
    throw unsupported(path, ctx.route, "document URLs are not supported");
  }
  if (p.source.kind === "file_id") file.file_id = p.source.fileId;
  else file.file_data = dataUri(p.source.mediaType, p.source.data);
  if (p.filename) file.filename = p.filename;
  return { type: "file", file };
}

/** Chat has no input slot for reasoning, so thinking is not replayed. */
function encodeAssistant(parts: ir.Part[], path: string, ctx: EncodeContext): Obj[] {
  const texts: ir.TextPart[] = [];
  const toolCalls: Obj[] = [];
  parts.forEach((p, j) => {
    if (p.type === "text") texts.push(p);
    else if (p.type === "tool_call") toolCalls.push(toolCallFromIr(p, p.id, upstreamSignature(p)));
    else if (p.type !== "thinking" && p.type !== "redacted_thinking") {
      throw unsupported(
        `${path}.content[${j}]`,
        ctx.route,
        `${p.type} parts in assistant messages are not supported`,
      );
    }
  });
  // A turn that was only reasoning has nothing chat can replay (and chat rejects it empty).
  if (texts.length === 0 && toolCalls.length === 0) return [];
  const message: Obj = { role: "assistant", content: texts.length ? joinText(texts, "") : null };
  if (toolCalls.length) message.tool_calls = toolCalls;
  return [message];
}

/** A thought signature goes back only to its own family, where chat-compatible Gemini reads it. */
const upstreamSignature = (p: ir.ToolCallPart) => signatureExtra(signatureFor(p.signature, FAMILY));

// ---- tools and settings ----

function encodeTool(t: ir.Tool): Obj {
  if (t.kind === "custom") {
    return { type: "custom", custom: { name: t.name, description: t.description } };
  }
  return {
    type: "function",
    function: {
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      strict: t.strict,
    },
  };
}

function encodeToolChoice(choice: ir.ToolChoice, tools: ir.Tool[]): unknown {
  if (choice.type !== "tool") return choice.type;
  const custom = tools.find((t) => t.name === choice.name)?.kind === "custom";
  return custom
    ? { type: "custom", custom: { name: choice.name } }
    : { type: "function", function: { name: choice.name } };
}

/** LiteLLM's effort ↔ budget ladder (low 1024, medium 2048, high 4096), read backwards. */
function effortFromBudget(budget: number): ir.Effort | undefined {
  if (budget <= 0) return undefined; // 0 = off, -1 = Gemini's "dynamic": the model's default
  if (budget <= 1024) return "low";
  if (budget <= 2048) return "medium";
  return "high";
}

/**
 * Chat only knows an effort. Disabled or adaptive thinking leaves the model's default: a
 * `reasoning_effort` would be refused by models that do not reason.
 */
function effortFor(r: ir.Reasoning | undefined): ir.Effort | undefined {
  if (!r) return undefined;
  if (r.effort) return r.effort;
  if (r.disabled || r.budgetTokens === undefined) return undefined;
  return effortFromBudget(r.budgetTokens);
}

function encodeResponseFormat(f: ir.ResponseFormat): Obj {
  if (f.type !== "json_schema") return { type: f.type };
  return {
    type: "json_schema",
    json_schema: {
      // Chat requires a name; Anthropic and Gemini schemas have none.
      name: f.name ?? "response",
      description: f.description,
      schema: f.schema,
      strict: f.strict,
    },
  };
}
