/**
 * IR → a Responses provider's request. Stateless (`store: false`): the whole conversation
 * goes in `input`, and OpenAI reasoning is replayed from its `encrypted_content`, which is
 * asked for whenever reasoning is on. Features Responses lacks that change the output (stop
 * sequences, several choices, penalties, audio) are rejected; randomness hints it lacks
 * (`seed`, `top_k`) are dropped and reported in `ctx.dropped`.
 */
import type { EncodeContext } from "../../src/kit/codec.ts";
import { unsupported } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import { signatureFor } from "../../src/kit/signature.ts";
import { dataUri, effortForBudget, TOOL_ERROR_PREFIX } from "../shared.ts";
import { dropOptions, planHosted } from "../hosted.ts";

type Item = Record<string, unknown>;

export function encodeRequest(req: ir.Request, ctx: EncodeContext): Record<string, unknown> {
  rejectInexpressible(req, ctx);
  const reasoning = reasoningOf(req.reasoning);
  const instructions = req.system.map((p) => p.text).join("\n\n");
  const body: Record<string, unknown> = {
    model: ctx.model,
    ...(instructions && { instructions }),
    input: new InputEncoder(ctx.route).encode(req.messages),
  };
  // Responses has hosted web search (next to function tools), but no web fetch.
  const hosted = planHosted(req, ctx, (t) => t.kind === "web_search");
  const search = hosted.tools.map((t) => webSearchTool(t, ctx));
  // Tool settings without tools are errors to OpenAI, and mean nothing anyway.
  if (req.tools?.length || search.length) {
    body.tools = [...(req.tools ?? []).map(toolDefinition), ...search];
    if (req.toolChoice) body.tool_choice = toolChoiceOf(req.toolChoice, req.tools ?? []);
    if (hosted.forced) {
      // Responses cannot force one hosted tool by name; "required" does when it is the only one.
      if (req.tools?.length) ctx.dropped?.push("tool_choice");
      else body.tool_choice = "required";
    }
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.maxTokens !== undefined) body.max_output_tokens = req.maxTokens;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (reasoning) {
    if (Object.keys(reasoning).length) body.reasoning = reasoning;
    // Without stored state, reasoning can only be replayed from its encrypted content.
    if (reasoning.effort !== "none") body.include = ["reasoning.encrypted_content"];
  }
  // A search's sources are only listed when asked for; Anthropic clients want them back.
  if (search.length) body.include = [...(body.include as string[] ?? []), SOURCES];
  if (req.responseFormat) body.text = { format: formatOf(req.responseFormat) };
  if (req.metadata) body.metadata = req.metadata;
  // OpenAI caps the end-user id at 64 characters; a longer one (Claude Code's) is dropped.
  if (req.user && req.user.length <= 64) body.safety_identifier = req.user;
  else if (req.user) ctx.dropped?.push("user");
  body.store = false;
  body.stream = req.stream;
  return body;
}

function rejectInexpressible(req: ir.Request, ctx: EncodeContext) {
  const route = ctx.route;
  if (req.stop?.length) throw unsupported("stop", route, "stop sequences are not supported");
  if (req.n !== undefined && req.n > 1) {
    throw unsupported("n", route, "several choices (n > 1) are not supported");
  }
  if (req.presencePenalty) {
    throw unsupported("presence_penalty", route, "presence_penalty is not supported");
  }
  if (req.frequencyPenalty) {
    throw unsupported("frequency_penalty", route, "frequency_penalty is not supported");
  }
  if (req.seed !== undefined) ctx.dropped?.push("seed");
  if (req.topK !== undefined) ctx.dropped?.push("top_k");
}

function reasoningOf(
  r: ir.Reasoning | undefined,
): { effort?: ir.Effort; summary?: string } | undefined {
  if (!r) return undefined;
  if (r.disabled) return { effort: "none" };
  const out: { effort?: ir.Effort; summary?: string } = {};
  const effort = r.effort ?? effortForBudget(r.budgetTokens);
  if (effort) out.effort = effort;
  if (r.includeThoughts) out.summary = "auto";
  return out;
}

function toolDefinition(t: ir.Tool): Item {
  const description = t.description ? { description: t.description } : {};
  if (t.kind === "custom") return { type: "custom", name: t.name, ...description };
  return {
    type: "function",
    name: t.name,
    ...description,
    parameters: t.parameters ?? { type: "object", properties: {} },
    // Responses defaults to strict, which rejects most schemas written for other APIs.
    strict: t.strict ?? false,
  };
}

const SOURCES = "web_search_call.action.sources";

function webSearchTool(t: ir.HostedTool, ctx: EncodeContext): Item {
  dropOptions(t, ctx, ["maxUses", "blockedDomains"]);
  const out: Item = { type: "web_search" };
  if (t.allowedDomains) out.filters = { allowed_domains: t.allowedDomains };
  if (t.userLocation) out.user_location = { type: "approximate", ...t.userLocation };
  if (t.contextSize) out.search_context_size = t.contextSize;
  return out;
}

function toolChoiceOf(choice: ir.ToolChoice, tools: ir.Tool[]): unknown {
  if (choice.type !== "tool") return choice.type;
  const kind = tools.find((t) => t.name === choice.name)?.kind;
  return { type: kind === "custom" ? "custom" : "function", name: choice.name };
}

function formatOf(f: ir.ResponseFormat): Item {
  if (f.type !== "json_schema") return { type: f.type };
  return {
    type: "json_schema",
    name: f.name ?? "response",
    schema: f.schema,
    ...(f.strict !== undefined && { strict: f.strict }),
    ...(f.description && { description: f.description }),
  };
}

/** A filename for inline file data (OpenAI requires one), from its media type. */
function defaultFilename(mediaType: string): string {
  const ext = { "application/pdf": ".pdf", "text/plain": ".txt" }[mediaType] ?? "";
  return `document${ext}`;
}

const MESSAGE_ROLE: Record<ir.Role, string> = {
  system: "developer",
  user: "user",
  assistant: "assistant",
  tool: "user",
};

/** IR messages → input items, in order; each message's content runs become message items. */
class InputEncoder {
  private readonly items: Item[] = [];
  /** Call id → kind, so results answer with the matching output item type. */
  private readonly callKinds = new Map<string, ir.ToolCallPart["kind"]>();

  constructor(private readonly route: string) {}

  encode(messages: readonly ir.Message[]): Item[] {
    messages.forEach((m, i) => this.message(m, `messages[${i}]`));
    return this.items;
  }

  private message(m: ir.Message, path: string) {
    const role = MESSAGE_ROLE[m.role];
    let content: Item[] = [];
    const flush = () => {
      if (content.length) this.items.push({ type: "message", role, content });
      content = [];
    };
    m.parts.forEach((part, j) => {
      const at = `${path}.parts[${j}]`;
      if (part.type === "text" || part.type === "image" || part.type === "document") {
        content.push(this.contentPart(part, role, at));
        return;
      }
      flush();
      this.item(part, at);
    });
    flush();
  }

  private item(part: Exclude<ir.Part, ir.TextPart | ir.ImagePart | ir.DocumentPart>, at: string) {
    switch (part.type) {
      case "tool_call":
        this.callKinds.set(part.id, part.kind);
        this.items.push(
          part.kind === "custom"
            ? { type: "custom_tool_call", call_id: part.id, name: part.name, input: part.arguments }
            : {
              type: "function_call",
              call_id: part.id,
              name: part.name,
              arguments: part.arguments,
            },
        );
        return;
      case "tool_result":
        this.items.push({
          type: this.callKinds.get(part.callId) === "custom"
            ? "custom_tool_call_output"
            : "function_call_output",
          call_id: part.callId,
          output: this.toolOutput(part, at),
        });
        return;
      case "thinking":
        return this.reasoning(part.text, signatureFor(part.signature, "openai"));
      case "redacted_thinking":
        return this.reasoning("", part.family === "openai" ? part.data : undefined);
      case "audio":
        throw unsupported(at, this.route, "audio input is not supported");
    }
  }

  /** Only OpenAI's own reasoning can be replayed; other families' thinking stays behind. */
  private reasoning(text: string, encrypted: string | undefined) {
    if (encrypted === undefined) return;
    const summary = text ? [{ type: "summary_text", text }] : [];
    this.items.push({ type: "reasoning", summary, encrypted_content: encrypted });
  }

  private contentPart(
    part: ir.TextPart | ir.ImagePart | ir.DocumentPart,
    role: string,
    at: string,
  ) {
    if (part.type === "text") {
      return { type: role === "assistant" ? "output_text" : "input_text", text: part.text };
    }
    if (role === "assistant") {
      throw unsupported(at, this.route, `${part.type}s in assistant turns are not supported`);
    }
    return part.type === "image" ? imagePart(part) : filePart(part);
  }

  private toolOutput(part: ir.ToolResultPart, at: string): string | Item[] {
    const prefix = part.isError ? TOOL_ERROR_PREFIX : "";
    if (part.content.every((c) => c.type === "text")) {
      return prefix + part.content.map((c) => (c as ir.TextPart).text).join("\n");
    }
    const parts = part.content.map((c, k) => this.contentPart(c, "user", `${at}.content[${k}]`));
    return prefix ? [{ type: "input_text", text: prefix.trim() }, ...parts] : parts;
  }
}

function imagePart(part: ir.ImagePart): Item {
  const detail = part.detail ?? "auto";
  const s = part.source;
  if (s.kind === "file_id") return { type: "input_image", file_id: s.fileId, detail };
  const url = s.kind === "url" ? s.url : dataUri(s.mediaType, s.data);
  return { type: "input_image", image_url: url, detail };
}

function filePart(part: ir.DocumentPart): Item {
  const s = part.source;
  const filename = part.filename ? { filename: part.filename } : {};
  switch (s.kind) {
    case "file_id":
      return { type: "input_file", file_id: s.fileId, ...filename };
    case "url":
      return { type: "input_file", file_url: s.url, ...filename };
    case "base64":
      return {
        type: "input_file",
        filename: part.filename ?? defaultFilename(s.mediaType),
        file_data: dataUri(s.mediaType, s.data),
      };
  }
}
