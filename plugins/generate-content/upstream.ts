/** IR to a Gemini generateContent request body (the provider speaks Gemini). */
import type * as ir from "../../src/kit/ir.ts";
import type { EncodeContext } from "../../src/kit/codec.ts";
import { badRequest, unsupported } from "../../src/kit/errors.ts";
import { modelSegment } from "../../src/kit/model_segment.ts";
import { signatureFor } from "../../src/kit/signature.ts";
import { argumentsObject, CUSTOM_TOOL_SCHEMA, urlSource } from "../shared.ts";
import { dropOptions, planHosted } from "../hosted.ts";
import { forGemini } from "./json_schema.ts";
import { audioMime, FAMILY, geminiId } from "./parts.ts";

type Part = Record<string, unknown>;
interface Content {
  role: "user" | "model";
  parts: Part[];
}

/** The upstream path; the model becomes one safe segment before its `:action`. */
export const path = (model: string, stream: boolean, alt = "?alt=sse"): string =>
  `/v1beta/models/${modelSegment(model, { action: true })}:` +
  (stream ? `streamGenerateContent${alt}` : "generateContent");

export function encodeRequest(req: ir.Request, ctx: EncodeContext): Record<string, unknown> {
  if (req.n !== undefined && req.n > 1) {
    throw unsupported("n", ctx.route, "several candidates (n > 1) cannot be returned");
  }
  const body: Record<string, unknown> = { contents: encodeMessages(req.messages, ctx) };
  const system = plainText(req.system);
  if (system.length) body.systemInstruction = { parts: system };
  // Gemini models refuse built-in tools next to function declarations (wire-formats §6): a
  // request with function tools keeps those, and its hosted tools are dropped and reported.
  const hosted = planHosted(req, ctx, (_t, withFunctions) => !withFunctions);
  if (req.tools?.length) {
    body.tools = [{ functionDeclarations: req.tools.map(encodeTool) }];
    if (req.toolChoice) {
      body.toolConfig = { functionCallingConfig: encodeToolChoice(req.toolChoice) };
    }
  } else if (hosted.tools.length) {
    // Gemini cannot force a built-in tool: offered alone, the model decides when to search.
    body.tools = hosted.tools.map((t) => builtInTool(t, ctx));
  }
  // Gemini cannot forbid parallel calls: the hint is dropped, and reported as dropped.
  if (req.parallelToolCalls === false) ctx.dropped?.push("parallel_tool_calls");
  const config = generationConfig(req);
  if (Object.keys(config).length) body.generationConfig = config;
  return body;
}

// ---- contents ----

/** Gemini has one system instruction; later system messages become marked user text. */
const SYSTEM_NOTE =
  "Note from the operator, not the user: the following was a system instruction given at this point of the conversation.";

/**
 * Gemini 3 rejects a model turn whose first function call has no thought signature. History
 * written by another model family has none; Google documents this value for that case.
 */
const SKIP_SIGNATURE = "skip_thought_signature_validator";

function encodeMessages(messages: ir.Message[], ctx: EncodeContext): Content[] {
  const names = toolNames(messages);
  const contents: Content[] = [];
  for (const msg of messages) {
    const role = msg.role === "assistant" ? "model" : "user";
    const parts = msg.role === "system"
      ? systemAsUserText(msg)
      : msg.parts.flatMap((p) => encodePart(p, names, ctx));
    if (!parts.length) continue;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  }
  for (const content of contents) {
    if (content.role === "user") responsesFirst(content);
    else signFirstCall(content);
  }
  return contents;
}

/** Non-empty text parts: Gemini rejects empty ones. */
const plainText = (parts: ir.Part[]): Part[] =>
  parts.flatMap((p) => (p.type === "text" && p.text ? [{ text: p.text }] : []));

function systemAsUserText(msg: ir.Message): Part[] {
  const text = plainText(msg.parts);
  return text.length ? [{ text: SYSTEM_NOTE }, ...text] : [];
}

/** Function responses must open the turn that answers the calls; other user parts follow. */
function responsesFirst(content: Content) {
  const isResponse = (p: Part) => "functionResponse" in p;
  content.parts = [
    ...content.parts.filter(isResponse),
    ...content.parts.filter((p) => !isResponse(p)),
  ];
}

function signFirstCall(content: Content) {
  const calls = content.parts.filter((p) => "functionCall" in p);
  if (calls.length && !calls.some((p) => p.thoughtSignature)) {
    calls[0].thoughtSignature = SKIP_SIGNATURE;
  }
}

/** Gemini's function responses need the function's name; results elsewhere carry only ids. */
function toolNames(messages: ir.Message[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const msg of messages) {
    for (const p of msg.parts) if (p.type === "tool_call") names.set(p.id, p.name);
  }
  return names;
}

function withSignature(part: Part, sig: ir.Signature | undefined): Part {
  const value = signatureFor(sig, FAMILY);
  return value === undefined ? part : { ...part, thoughtSignature: value };
}

function encodePart(p: ir.Part, names: Map<string, string>, ctx: EncodeContext): Part[] {
  switch (p.type) {
    case "text":
      // Gemini rejects empty text unless it carries one of its own signatures.
      return p.text || signatureFor(p.signature, FAMILY)
        ? [withSignature({ text: p.text }, p.signature)]
        : [];
    case "image":
    case "document":
      return [inlineData(p, ctx)];
    case "audio":
      return [{ inlineData: { mimeType: audioMime(p.format), data: p.data } }];
    case "tool_call": {
      const id = geminiId(p.id);
      const call = { ...(id && { id }), name: p.name, args: argumentsObject(p) };
      return [withSignature({ functionCall: call }, p.signature)];
    }
    case "tool_result":
      return [functionResponse(p, names, ctx)];
    case "thinking":
      // Thought text is the model's own summary; Gemini only needs it back with its signature.
      return signatureFor(p.signature, FAMILY)
        ? [withSignature({ text: p.text, thought: true }, p.signature)]
        : [];
    case "redacted_thinking":
      return []; // another family's encrypted reasoning means nothing to Gemini
    case "hosted_call":
      return []; // a hosted run of another vendor cannot be replayed here
  }
}

/** A hosted tool as Gemini's built-in one; options it has no field for are reported. */
function builtInTool(t: ir.HostedTool, ctx: EncodeContext): Part {
  if (t.kind === "web_fetch") {
    dropOptions(t, ctx, ["maxUses", "allowedDomains", "blockedDomains"]);
    return { urlContext: {} };
  }
  // `excludeDomains` exists on Vertex only, not on the Gemini API.
  dropOptions(t, ctx, [
    "maxUses",
    "allowedDomains",
    "blockedDomains",
    "userLocation",
    "contextSize",
  ]);
  return { googleSearch: {} };
}

function functionResponse(
  p: ir.ToolResultPart,
  names: Map<string, string>,
  ctx: EncodeContext,
): Part {
  const name = p.name ?? names.get(p.callId);
  if (name === undefined) {
    throw badRequest(
      `tool result ${p.callId}: no tool call with this id precedes it, and Gemini needs the function name`,
      "tool_call_id",
    );
  }
  const text = p.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("\n");
  const media = p.content.flatMap((c) => (c.type === "text" ? [] : [inlineData(c, ctx)]));
  const id = geminiId(p.callId);
  return {
    functionResponse: {
      ...(id && { id }),
      name,
      response: p.isError ? { error: text } : { output: text },
      ...(media.length && { parts: media }),
    },
  };
}

/** A pure codec fetches nothing: media must arrive inline. */
function inlineData(p: ir.ImagePart | ir.DocumentPart, ctx: EncodeContext): Part {
  const source = p.source.kind === "url" ? urlSource(p.source.url) : p.source;
  const noun = p.type === "image" ? "image" : "document";
  switch (source.kind) {
    case "base64":
      return { inlineData: { mimeType: source.mediaType, data: source.data } };
    case "url":
      throw unsupported(
        p.type === "image" ? "image_url" : "file_url",
        ctx.route,
        `${noun} URLs cannot be fetched for a generate-content upstream; send the ${noun} inline as a data: URI`,
      );
    case "file_id":
      throw unsupported(
        "file_id",
        ctx.route,
        `uploaded file ids cannot be resolved for a generate-content upstream; send the ${noun} inline`,
      );
  }
}

// ---- tools ----

function encodeTool(t: ir.Tool): Record<string, unknown> {
  const schema = t.kind === "custom" ? CUSTOM_TOOL_SCHEMA : t.parameters && forGemini(t.parameters);
  return {
    name: t.name,
    ...(t.description !== undefined && { description: t.description }),
    ...(schema && { parametersJsonSchema: schema }),
  };
}

function encodeToolChoice(choice: ir.ToolChoice): Record<string, unknown> {
  switch (choice.type) {
    case "auto":
      return { mode: "AUTO" };
    case "none":
      return { mode: "NONE" };
    case "required":
      return { mode: "ANY" };
    case "tool":
      return { mode: "ANY", allowedFunctionNames: [choice.name] };
  }
}

// ---- generation config ----

function generationConfig(req: ir.Request): Record<string, unknown> {
  const config: Record<string, unknown> = {
    temperature: req.temperature,
    topP: req.topP,
    topK: req.topK,
    maxOutputTokens: req.maxTokens,
    stopSequences: req.stop?.length ? req.stop : undefined,
    seed: req.seed,
    presencePenalty: req.presencePenalty,
    frequencyPenalty: req.frequencyPenalty,
    ...responseFormat(req.responseFormat),
    thinkingConfig: thinkingConfig(req.reasoning),
  };
  return Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined));
}

function responseFormat(format: ir.ResponseFormat | undefined): Record<string, unknown> {
  switch (format?.type) {
    case "json_schema":
      return { responseMimeType: "application/json", responseJsonSchema: forGemini(format.schema) };
    case "json_object":
      return { responseMimeType: "application/json" };
    default:
      return {};
  }
}

/** Gemini 3's thinking levels; above HIGH there is nothing higher to ask for. */
const THINKING_LEVEL: Record<Exclude<ir.Effort, "none">, string> = {
  minimal: "MINIMAL",
  low: "LOW",
  medium: "MEDIUM",
  high: "HIGH",
  xhigh: "HIGH",
  max: "HIGH",
};

/**
 * An explicit budget wins (Gemini rejects a budget and a level together); an effort becomes a
 * level; adaptive thinking is Gemini's dynamic budget (-1).
 */
function thinkingConfig(r: ir.Reasoning | undefined): Record<string, unknown> | undefined {
  if (!r) return undefined;
  if (r.disabled || r.effort === "none") return { thinkingBudget: 0 };
  const include = r.includeThoughts ? { includeThoughts: true } : {};
  if (r.budgetTokens !== undefined) return { thinkingBudget: r.budgetTokens, ...include };
  if (r.effort) return { thinkingLevel: THINKING_LEVEL[r.effort], ...include };
  if (r.adaptive) return { thinkingBudget: -1, ...include };
  return r.includeThoughts ? include : undefined;
}
