/**
 * IR to an Interactions request body (the provider speaks Interactions). The gateway sends the
 * whole conversation as steps every time, with `store: false`: Google keeps nothing it would
 * only be asked to forget.
 */
import type * as ir from "../../src/kit/ir.ts";
import type { EncodeContext } from "../../src/kit/codec.ts";
import { unsupported } from "../../src/kit/errors.ts";
import { signatureFor } from "../../src/kit/signature.ts";
import { CUSTOM_TOOL_SCHEMA, urlSource } from "../shared.ts";
import { dropOptions, planHosted } from "../hosted.ts";
import { FAMILY, modelSteps, type SignatureSlot, textContent } from "./steps.ts";

type Obj = Record<string, unknown>;

export const path = (): string => "/v1beta/interactions";

/** Only Gemini's own signatures go to Gemini. */
const own: SignatureSlot = (sig) => signatureFor(sig, FAMILY);

export function encodeRequest(req: ir.Request, ctx: EncodeContext): Record<string, unknown> {
  if (req.n !== undefined && req.n > 1) {
    throw unsupported("n", ctx.route, "several candidates (n > 1) cannot be returned");
  }
  for (
    const [field, value] of [
      ["presence_penalty", req.presencePenalty],
      ["frequency_penalty", req.frequencyPenalty],
    ] as const
  ) {
    if (value !== undefined) throw unsupported(field, ctx.route);
  }
  if (req.topK !== undefined) ctx.dropped?.push("top_k");
  // Interactions cannot forbid parallel calls: the hint is dropped, and reported as dropped.
  if (req.parallelToolCalls === false) ctx.dropped?.push("parallel_tool_calls");
  const system = req.system.map((p) => p.text).filter(Boolean).join("\n\n");
  const body: Obj = {
    model: ctx.model,
    input: req.messages.flatMap((m) => messageSteps(m, ctx)),
    ...(system && { system_instruction: system }),
    ...tools(req, ctx),
    stream: req.stream,
    store: false,
  };
  const config = generationConfig(req);
  if (Object.keys(config).length) body.generation_config = config;
  if (req.responseFormat && req.responseFormat.type !== "text") {
    const schema = req.responseFormat.type === "json_schema"
      ? req.responseFormat.schema
      : undefined;
    body.response_format = {
      type: "text",
      mime_type: "application/json",
      ...(schema && { schema }),
    };
  }
  return body;
}

// ---- input ----

/** Interactions has one system instruction; later system messages become marked user text. */
const SYSTEM_NOTE = "Note from the operator, not the user: a system instruction given here.";

function messageSteps(msg: ir.Message, ctx: EncodeContext): Obj[] {
  switch (msg.role) {
    case "assistant":
      // Thought text goes back only with Gemini's signature: another family's is not Gemini's.
      return msg.parts.flatMap((p) =>
        p.type === "thinking" && own(p.signature) === undefined ? [] : modelSteps(p, own)
      );
    case "system": {
      const text = msg.parts.flatMap((p) => (p.type === "text" && p.text ? [p.text] : []));
      return text.length ? [userInput([SYSTEM_NOTE, ...text].map(textBlock))] : [];
    }
    default: {
      const results = msg.parts.flatMap((
        p,
      ) => (p.type === "tool_result" ? [functionResult(p, ctx)] : []));
      const content = msg.parts.flatMap((
        p,
      ) => (p.type === "tool_result" ? [] : userContent(p, ctx)));
      return [...results, ...(content.length ? [userInput(content)] : [])];
    }
  }
}

const textBlock = (text: string): Obj => ({ type: "text", text });
const userInput = (content: Obj[]): Obj => ({ type: "user_input", content });

function userContent(p: ir.Part, ctx: EncodeContext): Obj[] {
  switch (p.type) {
    case "text":
      return p.text ? [textContent(p)] : [];
    case "image":
    case "document":
      return [mediaBlock(p, ctx)];
    case "audio":
      return [{ type: "audio", data: p.data, mime_type: `audio/${p.format}` }];
    default:
      return [];
  }
}

function functionResult(p: ir.ToolResultPart, ctx: EncodeContext): Obj {
  const onlyText = p.content.every((c) => c.type === "text");
  const result = onlyText
    ? p.content.map((c) => (c as ir.TextPart).text).join("\n")
    : p.content.flatMap((c) => userContent(c, ctx));
  return {
    type: "function_result",
    call_id: p.callId,
    ...(p.name !== undefined && { name: p.name }),
    ...(p.isError && { is_error: true }),
    result,
  };
}

/** Media go inline, or by URL (Interactions fetches a `uri` itself). */
function mediaBlock(p: ir.ImagePart | ir.DocumentPart, ctx: EncodeContext): Obj {
  const source = p.source.kind === "url" ? urlSource(p.source.url) : p.source;
  switch (source.kind) {
    case "base64":
      return { type: p.type, data: source.data, mime_type: source.mediaType };
    case "url":
      return { type: p.type, uri: source.url };
    case "file_id":
      throw unsupported(
        "file_id",
        ctx.route,
        `uploaded file ids cannot be resolved for an interactions upstream; send the ${p.type} inline`,
      );
  }
}

// ---- tools ----

/** Each hosted kind's built-in tool, and the options it has no field for (reported dropped). */
const BUILT_IN: Record<ir.HostedKind, { type: string; unsupported: (keyof ir.HostedTool)[] }> = {
  web_search: {
    type: "google_search",
    unsupported: ["maxUses", "allowedDomains", "blockedDomains", "userLocation", "contextSize"],
  },
  web_fetch: { type: "url_context", unsupported: ["maxUses", "allowedDomains", "blockedDomains"] },
};

function tools(req: ir.Request, ctx: EncodeContext): Obj {
  // Interactions takes built-in tools beside function declarations.
  const hosted = planHosted(req, ctx, () => true);
  const list: Obj[] = (req.tools ?? []).map((t) => ({
    type: "function",
    name: t.name,
    ...(t.description !== undefined && { description: t.description }),
    parameters: t.kind === "custom" ? CUSTOM_TOOL_SCHEMA : t.parameters ?? { type: "object" },
  }));
  for (const t of hosted.tools) {
    const { type, unsupported } = BUILT_IN[t.kind!];
    dropOptions(t, ctx, unsupported);
    list.push({ type });
  }
  return list.length ? { tools: list } : {};
}

function toolChoice(choice: ir.ToolChoice | undefined): unknown {
  switch (choice?.type) {
    case "auto":
    case "none":
      return choice.type;
    case "required":
      return "any";
    case "tool":
      return { allowed_tools: { mode: "any", tools: [choice.name] } };
  }
}

// ---- generation config ----

/** Interactions' thinking levels; above `high` there is nothing higher to ask for. */
const THINKING_LEVEL: Record<ir.Effort, string> = {
  none: "minimal", // thinking cannot be switched off: the least there is
  minimal: "minimal",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high",
  max: "high",
};

/** A token budget as the nearest level (Interactions has levels only). */
const budgetLevel = (budget: number) => budget <= 1024 ? "low" : budget <= 8192 ? "medium" : "high";

function thinking(r: ir.Reasoning | undefined): Obj {
  if (!r) return {};
  const level = r.disabled
    ? "minimal"
    : r.effort
    ? THINKING_LEVEL[r.effort]
    : r.budgetTokens !== undefined
    ? budgetLevel(r.budgetTokens)
    : undefined; // adaptive: the model's own default
  const summaries = r.includeThoughts === undefined
    ? undefined
    : r.includeThoughts
    ? "auto"
    : "none";
  return {
    ...(level && { thinking_level: level }),
    ...(summaries && { thinking_summaries: summaries }),
  };
}

function generationConfig(req: ir.Request): Obj {
  const config: Obj = {
    temperature: req.temperature,
    top_p: req.topP,
    seed: req.seed,
    max_output_tokens: req.maxTokens,
    stop_sequences: req.stop?.length ? req.stop : undefined,
    tool_choice: req.tools?.length ? toolChoice(req.toolChoice) : undefined,
    ...thinking(req.reasoning),
  };
  return Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined));
}
