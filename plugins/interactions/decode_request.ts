/**
 * An Interactions client's request (@google/genai `interactions.create`) to IR. The route's
 * upstream is another format here (an Interactions provider gets the body relayed), so what
 * only Google can run — agents, background runs, stored chains it would have to resolve,
 * non-text outputs — is refused with a 400 naming the field.
 */
import type * as ir from "../../src/kit/ir.ts";
import { badRequest } from "../../src/kit/errors.ts";
import {
  type GenerationConfig,
  type InteractionsRequest,
  parseRequest,
  type ResponseFormat,
} from "./schema.ts";
import { decodeInput, interactionsOnly } from "./history.ts";

type Obj = Record<string, unknown>;

export function decodeRequest(body: Record<string, unknown>, model: string): ir.Request {
  const req = parseRequest(body);
  refuse(req);
  const gen = req.generation_config ?? {};
  return {
    model,
    system: req.system_instruction ? [{ type: "text", text: req.system_instruction }] : [],
    messages: decodeInput(req.input),
    ...decodeTools(req),
    maxTokens: gen.max_output_tokens,
    temperature: gen.temperature,
    topP: gen.top_p,
    stop: gen.stop_sequences,
    seed: gen.seed,
    reasoning: decodeThinking(gen),
    responseFormat: decodeResponseFormat(req),
    stream: req.stream === true,
    // Interactions always reports usage at the end of a stream.
    streamUsage: true,
  };
}

function refuse(req: InteractionsRequest) {
  if (req.agent !== undefined) throw interactionsOnly("agent", "agent interactions");
  if (req.model === undefined) throw badRequest("model: required", "model");
  if (req.background === true) {
    throw badRequest("background: background interactions are not supported", "background");
  }
  // The endpoint resolves a chain from the gateway's store and removes the field first.
  if (req.previous_interaction_id !== undefined) {
    throw interactionsOnly("previous_interaction_id", "interactions stored by Google");
  }
  // Only a provider that stops at a decode limit issues one; a converted answer always ends.
  if (req.continuation_token !== undefined) {
    throw interactionsOnly("continuation_token", "continuation tokens");
  }
  const other = req.response_modalities?.find((m) => m.toUpperCase() !== "TEXT");
  if (other) throw interactionsOnly("response_modalities", `${other} outputs`);
}

// ---- tools ----

/** Built-in tools with a counterpart elsewhere; the others have none (mapped by policy). */
const HOSTED_KINDS: Record<string, ir.HostedKind> = {
  google_search: "web_search",
  url_context: "web_fetch",
};

function decodeTools(
  req: InteractionsRequest,
): Pick<ir.Request, "tools" | "toolChoice" | "hostedTools"> {
  const hosted: ir.HostedTool[] = [];
  let tools: ir.Tool[] = [];
  (req.tools ?? []).forEach((t, i) => {
    const tool = t as Obj;
    if (t.type !== "function") {
      const kind = HOSTED_KINDS[t.type];
      hosted.push({ name: t.type, field: `tools[${i}]`, ...(kind && { kind }) });
      return;
    }
    tools.push({
      name: String(tool.name),
      ...(typeof tool.description === "string" && { description: tool.description }),
      ...(tool.parameters !== undefined && { parameters: tool.parameters as Obj }),
    });
  });
  const choice = req.generation_config?.tool_choice;
  const mode = typeof choice === "string" ? choice : choice?.allowed_tools?.mode ?? "auto";
  const names = typeof choice === "string" ? [] : choice?.allowed_tools?.tools ?? [];
  if (names.length > 1 || (names.length === 1 && mode !== "any")) {
    // Offering only the allowed functions is the same constraint.
    tools = tools.filter((t) => names.includes(t.name));
  }
  const toolChoice: ir.ToolChoice | undefined = choice === undefined
    ? undefined
    : mode === "none"
    ? { type: "none" }
    : mode === "any"
    ? names.length === 1 ? { type: "tool", name: names[0] } : { type: "required" }
    : { type: "auto" }; // `validated` checks calls against their schema; the model still chooses
  return {
    tools: tools.length ? tools : undefined,
    toolChoice,
    ...(hosted.length && { hostedTools: hosted }),
  };
}

// ---- generation config ----

function decodeThinking(gen: GenerationConfig): ir.Reasoning | undefined {
  const reasoning: ir.Reasoning = {};
  if (gen.thinking_level) reasoning.effort = gen.thinking_level;
  if (gen.thinking_summaries) reasoning.includeThoughts = gen.thinking_summaries === "auto";
  return Object.keys(reasoning).length ? reasoning : undefined;
}

function decodeResponseFormat(req: InteractionsRequest): ir.ResponseFormat | undefined {
  const formats: ResponseFormat[] = req.response_format === undefined
    ? []
    : Array.isArray(req.response_format)
    ? req.response_format
    : [req.response_format];
  const other = formats.find((f) => f.type !== "text");
  if (other) throw interactionsOnly("response_format", `${other.type} outputs`);
  const text = formats[0];
  const mime = (text?.mime_type ?? req.response_mime_type)?.toLowerCase();
  if (mime === undefined || mime === "text/plain") return undefined;
  if (mime !== "application/json") {
    throw interactionsOnly("response_format.mime_type", `${mime} responses`);
  }
  return text?.schema ? { type: "json_schema", schema: text.schema } : { type: "json_object" };
}
