/**
 * A Gemini client's request (Gemini CLI, @google/genai) to IR. The route's upstream is never
 * Gemini here (same-format routes are relayed untouched), so Gemini-only features are
 * rejected with a 400 that names them.
 */
import type * as ir from "../../src/kit/ir.ts";
import { badRequest } from "../../src/kit/errors.ts";
import { readSignature } from "../../src/kit/signature.ts";
import { fromOpenApi } from "./json_schema.ts";
import { audioFormat, FAMILY, readThought } from "./parts.ts";
import {
  type GeminiContent,
  type GeminiFunctionDeclaration,
  type GeminiGenerationConfig,
  type GeminiPart,
  type GeminiRequest,
  parseRequest,
} from "./schema.ts";

const geminiOnly = (field: string, what: string) =>
  badRequest(`${field}: ${what} only work with a generate-content upstream`, field);

export function decodeRequest(body: Record<string, unknown>, model: string): ir.Request {
  const req = parseRequest(body);
  if (req.cachedContent !== undefined) {
    throw geminiOnly("cachedContent", "cached content resources");
  }
  // Only a Gemini upstream issues one; a converted route runs the hops itself and issues none.
  if (req.continuationToken !== undefined) {
    throw geminiOnly("continuationToken", "continuation tokens");
  }
  const gen = req.generationConfig ?? {};
  checkModalities(gen);
  return {
    model,
    system: decodeSystem(req.systemInstruction),
    messages: decodeContents(req.contents ?? []),
    ...decodeTools(req),
    maxTokens: gen.maxOutputTokens,
    temperature: gen.temperature,
    topP: gen.topP,
    topK: gen.topK,
    stop: gen.stopSequences,
    seed: gen.seed,
    presencePenalty: gen.presencePenalty,
    frequencyPenalty: gen.frequencyPenalty,
    n: gen.candidateCount,
    reasoning: decodeThinking(gen.thinkingConfig),
    responseFormat: decodeResponseFormat(gen),
    // The URL's action (`:streamGenerateContent`) decides streaming; the core sets it from the endpoint.
    stream: false,
    // Gemini responses always carry usageMetadata.
    streamUsage: true,
  };
}

function checkModalities(gen: GeminiGenerationConfig) {
  const other = gen.responseModalities?.find((m) => m.toUpperCase() !== "TEXT");
  if (other) throw geminiOnly("generationConfig.responseModalities", `${other} outputs`);
}

// ---- system ----

function decodeSystem(system: GeminiRequest["systemInstruction"]): ir.TextPart[] {
  return (system?.parts ?? []).map((part, j) => {
    if (typeof part.text !== "string") {
      const field = `systemInstruction.parts[${j}]`;
      throw badRequest(`${field}: only text parts are supported in a system instruction`, field);
    }
    return { type: "text", text: part.text };
  });
}

// ---- contents ----

/**
 * Pairs function responses with the calls they answer, statelessly from the history alone:
 * an id-less call gets `call_<n>` (its position among all calls, so the id is the same on
 * every later turn), and a response whose id matches no call takes the oldest unanswered call
 * of the same name.
 */
class CallPairing {
  private count = 0;
  private readonly known = new Set<string>();
  private readonly pending = new Map<string, string[]>();

  call(id: string | undefined, name: string): string {
    const callId = id ?? `call_${this.count}`;
    this.count++;
    this.known.add(callId);
    this.pending.set(name, [...(this.pending.get(name) ?? []), callId]);
    return callId;
  }

  result(id: string | undefined, name: string, field: string): string {
    const queue = this.pending.get(name) ?? [];
    const callId = id !== undefined && this.known.has(id) ? id : queue[0];
    if (callId === undefined) {
      throw badRequest(`${field}: no earlier functionCall named ${name} to answer`, field);
    }
    this.pending.set(name, queue.filter((q) => q !== callId));
    return callId;
  }
}

function decodeContents(contents: GeminiContent[]): ir.Message[] {
  const pairing = new CallPairing();
  const messages: ir.Message[] = [];
  contents.forEach((content, i) => {
    const role = content.role === "model" ? "assistant" : "user";
    (content.parts ?? []).forEach((part, j) => {
      const decoded = decodePart(part, role, pairing, `contents[${i}].parts[${j}]`);
      if (decoded) append(messages, decoded.type === "tool_result" ? "tool" : role, decoded);
    });
  });
  return messages;
}

/**
 * Adds a part to the conversation, merging consecutive turns of one role. In model turns,
 * text and thought fragments join up again: SDK chat histories keep each streamed chunk as
 * its own part (or content), and a signature often arrives on a later, empty fragment.
 */
function append(messages: ir.Message[], role: ir.Role, part: ir.Part) {
  const last = messages.at(-1);
  if (last?.role !== role) {
    messages.push({ role, parts: [part] });
    return;
  }
  const prev = last.parts.at(-1);
  if (role === "assistant" && prev && joinFragment(prev, part)) return;
  last.parts.push(part);
}

function joinFragment(prev: ir.Part, next: ir.Part): boolean {
  if (prev.type !== next.type || (next.type !== "text" && next.type !== "thinking")) return false;
  const target = prev as ir.TextPart | ir.ThinkingPart;
  target.text += next.text;
  if (next.signature) target.signature = next.signature;
  return true;
}

function decodePart(
  part: GeminiPart,
  role: "user" | "assistant",
  pairing: CallPairing,
  field: string,
): ir.Part | undefined {
  const signature = part.thoughtSignature === undefined
    ? undefined
    : readSignature(part.thoughtSignature, FAMILY);
  if (part.functionCall) {
    expectRole(role, "assistant", `${field}.functionCall`);
    const { id, name, args } = part.functionCall;
    return {
      type: "tool_call",
      id: pairing.call(id, name),
      name,
      arguments: JSON.stringify(args ?? {}),
      ...(signature && { signature }),
    };
  }
  if (part.functionResponse) {
    expectRole(role, "user", `${field}.functionResponse`);
    return decodeFunctionResponse(part.functionResponse, pairing, `${field}.functionResponse`);
  }
  if (part.thought) return readThought(part.text ?? "", part.thoughtSignature);
  if (part.inlineData) return decodeInlineData(part.inlineData, `${field}.inlineData`);
  if (part.fileData) return decodeFileData(part.fileData, `${field}.fileData`);
  if (part.text || signature) {
    return { type: "text", text: part.text ?? "", ...(signature && { signature }) };
  }
  if (part.text === "") return undefined; // carries nothing
  const kind = Object.keys(part).find((k) => k !== "thought" && k !== "thoughtSignature");
  if (kind) throw geminiOnly(`${field}.${kind}`, `${kind} parts`);
  throw badRequest(
    `${field}: expected text, inlineData, fileData, functionCall or functionResponse`,
    field,
  );
}

function expectRole(role: string, wanted: string, field: string) {
  if (role !== wanted) {
    const turn = wanted === "assistant" ? "model" : "user";
    throw badRequest(`${field}: only allowed in a ${turn} turn`, field);
  }
}

function decodeFunctionResponse(
  fr: NonNullable<GeminiPart["functionResponse"]>,
  pairing: CallPairing,
  field: string,
): ir.ToolResultPart {
  const { text, isError } = responseText(fr.response ?? {});
  const media = (fr.parts ?? []).map((p, k) => {
    const at = `${field}.parts[${k}]`;
    const decoded = p.inlineData
      ? decodeInlineData(p.inlineData, `${at}.inlineData`)
      : p.fileData
      ? decodeFileData(p.fileData, `${at}.fileData`)
      : undefined;
    if (decoded?.type !== "image" && decoded?.type !== "document") {
      throw badRequest(`${at}: expected an image or document`, at);
    }
    return decoded;
  });
  return {
    type: "tool_result",
    callId: pairing.result(fr.id, fr.name, field),
    name: fr.name,
    content: [...(text ? [{ type: "text" as const, text }] : []), ...media],
    ...(isError && { isError }),
  };
}

/** Gemini's convention is `{output}` or `{error}`; any other object is the result itself. */
function responseText(response: Record<string, unknown>): { text: string; isError: boolean } {
  const asText = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
  const keys = Object.keys(response);
  if (keys.length === 1 && keys[0] === "output") {
    return { text: asText(response.output), isError: false };
  }
  if (keys.length === 1 && keys[0] === "error") {
    return { text: asText(response.error), isError: true };
  }
  return { text: keys.length ? JSON.stringify(response) : "", isError: false };
}

// ---- media ----

function decodeMedia(
  mime: string,
  source: ir.MediaSource,
  field: string,
): ir.ImagePart | ir.DocumentPart | ir.AudioPart {
  const type = mime.toLowerCase().split("/")[0];
  if (type === "image") return { type: "image", source };
  if (type === "audio" && source.kind === "base64") {
    return { type: "audio", data: source.data, format: audioFormat(mime) };
  }
  if (type === "video") throw geminiOnly(field, "video inputs");
  if (type === "audio") throw geminiOnly(field, "audio file URIs");
  return { type: "document", source };
}

function decodeInlineData(blob: NonNullable<GeminiPart["inlineData"]>, field: string) {
  const { mimeType, data } = blob;
  return decodeMedia(mimeType, { kind: "base64", mediaType: mimeType, data }, field);
}

/** Only public http(s) URLs mean something to another vendor. */
function decodeFileData(
  fileData: NonNullable<GeminiPart["fileData"]>,
  field: string,
): ir.ImagePart | ir.DocumentPart | ir.AudioPart {
  const { fileUri, mimeType } = fileData;
  const url = URL.canParse(fileUri) ? new URL(fileUri) : undefined;
  if (!url || !/^https?:$/.test(url.protocol) || url.hostname === FILES_API_HOST) {
    throw geminiOnly(`${field}.fileUri`, "Gemini Files API and Cloud Storage URIs");
  }
  return decodeMedia(mimeType ?? "application/octet-stream", { kind: "url", url: fileUri }, field);
}

const FILES_API_HOST = "generativelanguage.googleapis.com";

// ---- tools ----

/** Gemini built-in tools with a counterpart in another format (the rest have none). */
const HOSTED_KINDS: Record<string, ir.HostedKind> = {
  googleSearch: "web_search",
  googleSearchRetrieval: "web_search",
  urlContext: "web_fetch",
};

/** A built-in tool as an IR hosted tool; the target maps, drops or refuses it. */
function hostedTool(key: string, value: unknown, field: string): ir.HostedTool {
  const out: ir.HostedTool = { name: key, field };
  const kind = HOSTED_KINDS[key];
  if (kind) out.kind = kind;
  const exclude = (value as { excludeDomains?: unknown } | null)?.excludeDomains;
  if (kind === "web_search" && Array.isArray(exclude) && exclude.length) {
    out.blockedDomains = exclude.map(String);
  }
  return out;
}

function decodeTools(
  req: GeminiRequest,
): Pick<ir.Request, "tools" | "toolChoice" | "hostedTools"> {
  const hosted: ir.HostedTool[] = [];
  const declarations = (req.tools ?? []).flatMap((tool, i) => {
    for (const [key, value] of Object.entries(tool)) {
      if (key !== "functionDeclarations") hosted.push(hostedTool(key, value, `tools[${i}].${key}`));
    }
    return tool.functionDeclarations ?? [];
  });
  let tools = declarations.map(decodeDeclaration);
  const config = req.toolConfig?.functionCallingConfig;
  const names = config?.allowedFunctionNames ?? [];
  let toolChoice: ir.ToolChoice | undefined;
  switch (config?.mode) {
    case "AUTO":
    case "VALIDATED": // schema-checked calls: the model still chooses between text and tools
      toolChoice = { type: "auto" };
      break;
    case "NONE":
      toolChoice = { type: "none" };
      break;
    case "ANY":
      if (names.length === 1) {
        toolChoice = { type: "tool", name: names[0] };
      } else {
        // Several allowed functions: offering only those is the same constraint.
        if (names.length > 1) tools = tools.filter((t) => names.includes(t.name));
        toolChoice = { type: "required" };
      }
  }
  return {
    tools: tools.length ? tools : undefined,
    toolChoice,
    ...(hosted.length && { hostedTools: hosted }),
  };
}

function decodeDeclaration(d: GeminiFunctionDeclaration): ir.Tool {
  const parameters = d.parametersJsonSchema ?? (d.parameters && fromOpenApi(d.parameters));
  return {
    name: d.name,
    ...(d.description !== undefined && { description: d.description }),
    ...(parameters && { parameters }),
  };
}

// ---- generation config ----

function decodeThinking(
  config: GeminiGenerationConfig["thinkingConfig"],
): ir.Reasoning | undefined {
  if (!config) return undefined;
  const reasoning: ir.Reasoning = {};
  const budget = config.thinkingBudget;
  if (budget === 0) reasoning.disabled = true;
  else if (budget === -1) reasoning.adaptive = true; // Gemini's "dynamic" thinking
  else if (budget !== undefined) reasoning.budgetTokens = budget;
  const level = config.thinkingLevel;
  if (level && level !== "THINKING_LEVEL_UNSPECIFIED") {
    reasoning.effort = level.toLowerCase() as ir.Effort;
  }
  if (config.includeThoughts !== undefined) reasoning.includeThoughts = config.includeThoughts;
  return Object.keys(reasoning).length ? reasoning : undefined;
}

function decodeResponseFormat(gen: GeminiGenerationConfig): ir.ResponseFormat | undefined {
  const mime = gen.responseMimeType?.toLowerCase();
  if (mime === undefined || mime === "text/plain") return undefined;
  if (mime !== "application/json") {
    throw geminiOnly("generationConfig.responseMimeType", `${gen.responseMimeType} responses`);
  }
  const schema = gen.responseJsonSchema ??
    (gen.responseSchema && fromOpenApi(gen.responseSchema));
  return schema ? { type: "json_schema", schema } : { type: "json_object" };
}
