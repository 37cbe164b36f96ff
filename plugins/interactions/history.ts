/**
 * Interactions input to IR messages: a user turn of content blocks, or a history of steps (the
 * steps of earlier interactions, as a client sends them back or a provider answers them).
 */
import type * as ir from "../../src/kit/ir.ts";
import { badRequest } from "../../src/kit/errors.ts";
import { readSignature } from "../../src/kit/signature.ts";
import { readMarked, REDACTED } from "../shared.ts";
import { charOffset } from "../hosted.ts";
import { type InputItem, type InteractionsRequest, isContentType } from "./schema.ts";
import { FAMILY } from "./steps.ts";

type Obj = Record<string, unknown>;

export const interactionsOnly = (field: string, what: string) =>
  badRequest(`${field}: ${what} only work with an interactions upstream`, field);

// ---- input ----

/** Text, one content block or a list of them is one user turn; a list of steps is history. */
export function decodeInput(input: InteractionsRequest["input"]): ir.Message[] {
  if (input === undefined) return [];
  if (typeof input === "string") return [{ role: "user", parts: [{ type: "text", text: input }] }];
  if (!Array.isArray(input)) return userTurn([input], () => "input");
  if (input.length === 0 || isContentType(input[0].type)) {
    return userTurn(input, (i) => `input[${i}]`);
  }
  const history = new History();
  input.forEach((item, i) => history.step(item, `input[${i}]`));
  return history.end();
}

function userTurn(items: InputItem[], field: (i: number) => string): ir.Message[] {
  const parts = items.flatMap((c, i) => {
    const part = decodeContent(c, field(i));
    return part ? [part] : [];
  });
  return parts.length ? [{ role: "user", parts }] : [];
}

/** Builds messages from steps; consecutive steps of one role share a message. */
export class History {
  readonly messages: ir.Message[] = [];
  /** A summary-less signed thought: the signature of the tool call that follows, if one does. */
  private held?: ir.Signature;

  step(item: InputItem, field: string) {
    const step = item as Obj;
    const held = this.held;
    this.held = undefined;
    if (held && step.type !== "function_call") this.add("assistant", thinking("", held));
    switch (item.type) {
      case "user_input":
        return this.contents(step.content, "user", `${field}.content`);
      case "model_output":
        return this.contents(step.content, "assistant", `${field}.content`);
      case "thought":
        return this.thought(step);
      case "function_call":
        return this.add("assistant", {
          type: "tool_call",
          id: String(step.id),
          name: String(step.name),
          arguments: JSON.stringify(step.arguments),
          ...(held && { signature: held }),
        });
      case "function_result":
        return this.add("tool", functionResult(step, field));
      case "google_search_call":
      case "url_context_call":
        return this.add("assistant", hostedCall(step));
      case "google_search_result":
      case "url_context_result":
        return this.hostedResult(step);
      default:
        if (isContentType(item.type)) {
          throw badRequest(`${field}: a content block cannot be mixed with steps`, field);
        }
        throw interactionsOnly(`${field}.type`, `${item.type} steps`);
    }
  }

  private add(role: ir.Role, part: ir.Part) {
    const last = this.messages.at(-1);
    if (last?.role === role) last.parts.push(part);
    else this.messages.push({ role, parts: [part] });
  }

  private contents(content: unknown, role: "user" | "assistant", field: string) {
    (content as InputItem[] | undefined ?? []).forEach((c, i) => {
      const at = `${field}[${i}]`;
      if (role === "assistant" && c.type !== "text") {
        throw interactionsOnly(at, `${c.type} outputs`);
      }
      const part = decodeContent(c, at);
      if (part) this.add(role, part);
    });
  }

  /** The messages, with a signed thought that ended the input kept as thinking. */
  end(): ir.Message[] {
    if (this.held) this.add("assistant", thinking("", this.held));
    return this.messages;
  }

  private thought(step: Obj) {
    const text = summaryText(step.summary);
    const raw = step.signature as string | undefined;
    const signature = raw === undefined ? undefined : readSignature(raw, FAMILY);
    const redacted = signature && readMarked(REDACTED, signature);
    if (redacted) {
      return this.add("assistant", {
        type: "redacted_thinking",
        data: redacted.value,
        family: redacted.family,
      });
    }
    if (signature && !text) {
      this.held = signature;
      return;
    }
    this.add("assistant", thinking(text, signature));
  }

  /** The result completes the call part its `call_id` names (a hosted run is one IR part). */
  private hostedResult(step: Obj) {
    const call = this.messages.flatMap((m) => m.parts).findLast(
      (p): p is ir.HostedCallPart => p.type === "hosted_call" && p.id === step.call_id,
    );
    if (!call) return;
    if (step.is_error === true) call.error = "error";
    const urls = (step.result as Obj[]).flatMap((r) => (typeof r.url === "string" ? [r] : []));
    if (
      call.kind === "web_fetch" && urls[0]?.status !== undefined && urls[0].status !== "success"
    ) {
      call.error = String(urls[0].status);
    }
  }
}

const thinking = (text: string, signature?: ir.Signature): ir.ThinkingPart => ({
  type: "thinking",
  text,
  ...(signature && { signature }),
});

const summaryText = (summary: unknown): string =>
  ((summary ?? []) as Obj[]).flatMap((c) => (c.type === "text" ? [String(c.text)] : [])).join("");

function hostedCall(step: Obj): ir.HostedCallPart {
  const args = (step.arguments ?? {}) as { queries?: string[]; urls?: string[] };
  return step.type === "url_context_call"
    ? { type: "hosted_call", id: String(step.id), kind: "web_fetch", url: args.urls?.[0] }
    : { type: "hosted_call", id: String(step.id), kind: "web_search", queries: args.queries };
}

function functionResult(step: Obj, field: string): ir.ToolResultPart {
  const result = step.result;
  const content: ir.ToolResultPart["content"] = typeof result === "string"
    ? [{ type: "text", text: result }]
    : Array.isArray(result)
    ? result.map((c, i) => resultContent(c, `${field}.result[${i}]`))
    : [{ type: "text", text: JSON.stringify(result) }];
  return {
    type: "tool_result",
    callId: String(step.call_id),
    ...(typeof step.name === "string" && { name: step.name }),
    content,
    ...(step.is_error === true && { isError: true }),
  };
}

function resultContent(c: InputItem, field: string): ir.TextPart | ir.ImagePart | ir.DocumentPart {
  const part = decodeContent(c, field);
  if (part?.type === "text" || part?.type === "image" || part?.type === "document") return part;
  throw badRequest(`${field}: expected text, an image or a document`, field);
}

// ---- content ----

function decodeContent(c: InputItem, field: string): ir.Part | undefined {
  const block = c as Obj;
  switch (c.type) {
    case "text":
      return block.text === "" ? undefined : textPart(block);
    case "image":
    case "document":
    case "audio":
      return media(c.type, block, field);
    case "video":
      throw interactionsOnly(field, "video inputs");
    default:
      throw badRequest(`${field}.type: expected "text", "image", "document" or "audio"`, field);
  }
}

/** Text with its `url_citation` annotations (byte offsets) as IR citations. */
function textPart(block: Obj): ir.TextPart {
  const text = String(block.text);
  const citations = ((block.annotations ?? []) as Obj[]).flatMap((a): ir.Citation[] => {
    if (a.type !== "url_citation" || typeof a.url !== "string") return [];
    return [{
      url: a.url,
      ...(typeof a.title === "string" && { title: a.title }),
      ...(typeof a.start_index === "number" && { start: charOffset(text, a.start_index) }),
      ...(typeof a.end_index === "number" && { end: charOffset(text, a.end_index) }),
    }];
  });
  return { type: "text", text, ...(citations.length && { citations }) };
}

function media(type: "image" | "document" | "audio", block: Obj, field: string): ir.Part {
  const mime = typeof block.mime_type === "string" ? block.mime_type : undefined;
  if (typeof block.data === "string") {
    if (type === "audio") {
      return { type: "audio", data: block.data, format: (mime ?? "audio/wav").split("/")[1] };
    }
    const mediaType = mime ?? (type === "image" ? "image/png" : "application/pdf");
    return { type, source: { kind: "base64", mediaType, data: block.data } };
  }
  const uri = typeof block.uri === "string" ? block.uri : undefined;
  if (!uri) throw badRequest(`${field}: expected data or uri`, field);
  if (type === "audio" || !/^https?:\/\//.test(uri) || new URL(uri).hostname === FILES_API_HOST) {
    throw interactionsOnly(`${field}.uri`, "Gemini Files API and Cloud Storage URIs");
  }
  return { type, source: { kind: "url", url: uri } };
}

const FILES_API_HOST = "generativelanguage.googleapis.com";
