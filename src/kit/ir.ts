/**
 * The hub: one intermediate representation every wire format decodes into and encodes from.
 * It is a superset of the formats, not any one vendor's shape: a vendor's feature is carried
 * as the neutral concept behind it (a cache breakpoint, a family-marked signature), which
 * formats that have the concept read and the others drop.
 */
import type { ErrorKind } from "./errors.ts";

/** A format plugin's id, the `api:` of the providers that speak it (src/kit/format.ts). */
export type Api = string;

/**
 * Who issued a signature or encrypted reasoning (a plugin's `family`): only that family can
 * read it back, so it is carried through other formats marked with its family.
 */
export type Family = string;

/**
 * A prompt-cache breakpoint: the prompt up to and including what carries it may be cached for
 * later requests. Formats with explicit breakpoints read and write it (Anthropic
 * `cache_control`; chat's `prompt_cache_breakpoint` sets one); the others drop it.
 */
export interface CacheBreakpoint {
  /** How long the cached prefix should live (`5m`, `1h`); absent: the provider's default. */
  ttl?: string;
}

/** What a part or tool may carry besides its content. */
export interface Extensions {
  cache?: CacheBreakpoint;
}

export type MediaSource =
  | { kind: "url"; url: string }
  | { kind: "base64"; mediaType: string; data: string }
  | { kind: "file_id"; fileId: string };

export interface TextPart extends Extensions {
  type: "text";
  text: string;
  /** Gemini `thoughtSignature` attached to a text part. */
  signature?: Signature;
  /** Web sources this text cites (answers of hosted web search / fetch). */
  citations?: Citation[];
}

/**
 * A cited web source. `start`/`end` are character (UTF-16) offsets into the text part; absent,
 * the whole part cites it (Anthropic cites per text block).
 */
export interface Citation {
  url: string;
  title?: string;
  start?: number;
  end?: number;
  /** The cited passage, when the vendor says (Anthropic `cited_text`). */
  citedText?: string;
}

export interface ImagePart extends Extensions {
  type: "image";
  source: MediaSource;
  /** OpenAI `detail` hint. */
  detail?: string;
}

export interface DocumentPart extends Extensions {
  type: "document";
  source: MediaSource;
  filename?: string;
}

export interface AudioPart {
  type: "audio";
  /** base64 */
  data: string;
  format: string;
}

/** A signature is opaque data bound to the family (and provider) that produced it. */
export interface Signature {
  family: Family;
  value: string;
}

export interface ToolCallPart extends Extensions {
  type: "tool_call";
  id: string;
  name: string;
  /** Arguments as a JSON string (the OpenAI convention); kept raw if it does not parse. */
  arguments: string;
  /** `custom` (free-text input) tools in OpenAI formats; default `function`. */
  kind?: "function" | "custom";
  /** Gemini thought signature that must go back with this call. */
  signature?: Signature;
}

export interface ToolResultPart extends Extensions {
  type: "tool_result";
  callId: string;
  /** Tool name when known (Gemini needs it; filled from the id→name map otherwise). */
  name?: string;
  content: (TextPart | ImagePart | DocumentPart)[];
  isError?: boolean;
}

export interface ThinkingPart {
  type: "thinking";
  text: string;
  signature?: Signature;
}

export interface RedactedThinkingPart {
  type: "redacted_thinking";
  /** Anthropic `redacted_thinking.data`, or an OpenAI reasoning item's `encrypted_content`. */
  data: string;
  family: Family;
}

/** What hosted (server-side) tools the gateway maps between vendors do. */
export type HostedKind = "web_search" | "web_fetch";

interface WebResult {
  url: string;
  title?: string;
  /** Anthropic `page_age`. */
  pageAge?: string;
}

/**
 * One run of a hosted tool in an answer: Anthropic `server_tool_use` + its `*_tool_result`,
 * a Responses `web_search_call` item, or Gemini `groundingMetadata` / `urlContextMetadata`.
 * It is complete when it appears (streams open and close it at once).
 */
export interface HostedCallPart {
  type: "hosted_call";
  id: string;
  kind: HostedKind;
  /** Search queries (Gemini may run several in one call). */
  queries?: string[];
  /** The fetched page (`web_fetch`). */
  url?: string;
  results?: WebResult[];
  /** The vendor's error code when the tool failed. */
  error?: string;
}

export type Part =
  | TextPart
  | HostedCallPart
  | ImagePart
  | DocumentPart
  | AudioPart
  | ToolCallPart
  | ToolResultPart
  | ThinkingPart
  | RedactedThinkingPart;

/** `system` here is a mid-conversation system/developer message. */
export type Role = "system" | "user" | "assistant" | "tool";

export interface Message {
  role: Role;
  parts: Part[];
}

export interface Tool extends Extensions {
  name: string;
  description?: string;
  /** JSON Schema of the arguments (`function` tools). */
  parameters?: Record<string, unknown>;
  strict?: boolean;
  /** `custom` = free-text input tool (OpenAI custom tools, e.g. Codex apply_patch). */
  kind?: "function" | "custom";
  /** Responses `namespace` the tool was declared in (Codex `additional_tools`); calls echo it. */
  namespace?: string;
}

/**
 * A hosted (server-side) tool the client declared: Responses `web_search`, Anthropic
 * `web_search_20250305`, Gemini `googleSearch`, and the others. Each target maps the kinds it
 * has natively; the rest are dropped and reported, or refused (route option `hosted_tools`).
 */
export interface HostedTool {
  /** Undefined: no other vendor has an equivalent (file search, code execution, …). */
  kind?: HostedKind;
  /** The client's name for it (its `type`, or Gemini's tool key). */
  name: string;
  /** Where the client declared it, e.g. `tools[8]`. */
  field: string;
  maxUses?: number;
  allowedDomains?: string[];
  blockedDomains?: string[];
  userLocation?: { city?: string; region?: string; country?: string; timezone?: string };
  /** OpenAI `search_context_size`. */
  contextSize?: string;
}

export type ToolChoice =
  | { type: "auto" }
  | { type: "none" }
  | { type: "required" }
  | { type: "tool"; name: string };

export type Effort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

export interface Reasoning {
  effort?: Effort;
  /** Explicit token budget (Anthropic `budget_tokens`, Gemini `thinkingBudget`). */
  budgetTokens?: number;
  /** Anthropic adaptive thinking. */
  adaptive?: boolean;
  /** Whether the client wants thinking text back (summaries / thoughts). */
  includeThoughts?: boolean;
  /** Explicitly disabled. */
  disabled?: boolean;
}

export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
    type: "json_schema";
    name?: string;
    schema: Record<string, unknown>;
    strict?: boolean;
    description?: string;
  };

export interface Request {
  model: string;
  /** System prompt blocks, in order (top-level system / instructions / systemInstruction). */
  system: TextPart[];
  messages: Message[];
  tools?: Tool[];
  toolChoice?: ToolChoice;
  /** Hosted tools, kept apart from the function tools the client runs itself. */
  hostedTools?: HostedTool[];
  /** The client forces this hosted tool (its `HostedTool.name`); `toolChoice` is then unset. */
  hostedChoice?: string;
  parallelToolCalls?: boolean;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Number of choices requested (only 1 is portable). */
  n?: number;
  reasoning?: Reasoning;
  responseFormat?: ResponseFormat;
  /** End-user id for abuse tracking (`user`, `safety_identifier`, `metadata.user_id`). */
  user?: string;
  metadata?: Record<string, string>;
  stream: boolean;
  /** Wants usage in the stream (chat `stream_options.include_usage`). */
  streamUsage?: boolean;
  /** A breakpoint at the end of the prompt, wherever that is (automatic caching). */
  cache?: CacheBreakpoint;
  /**
   * Codex in-band compaction (`compaction_trigger`): the messages end with a request for a
   * summary, and the Responses client encoder answers with one `compaction` item.
   */
  compaction?: true;
}

export type FinishReason =
  | "stop"
  | "length"
  | "tool_calls"
  | "content_filter"
  | "pause"
  | "error";

export interface Usage {
  /** Total input tokens, cache reads and writes included. */
  inputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  /** Output tokens, reasoning included. */
  outputTokens: number;
  reasoningTokens?: number;
}

export interface Response {
  id: string;
  model: string;
  /** Unix seconds. */
  created: number;
  parts: Part[];
  finish: FinishReason;
  /** Stop sequence that ended generation, when known. */
  stopSequence?: string;
  usage?: Usage;
  /** See the `finish` stream event's `continuation`. */
  continuation?: string;
}

/**
 * Stream events. Every part is opened, filled by deltas and closed; `index` is the part's
 * position in the final `Response.parts`. Exactly one `finish` ends a good stream; `error`
 * ends a broken one.
 */
export type StreamEvent =
  | { type: "start"; id: string; model: string; created: number; usage?: Usage }
  | {
    type: "part_start";
    index: number;
    part:
      | { type: "text" }
      | { type: "thinking" }
      | { type: "redacted_thinking"; data: string; family: Family }
      | {
        type: "tool_call";
        id: string;
        name: string;
        kind?: "function" | "custom";
        signature?: Signature;
      }
      | HostedCallPart;
  }
  /** A citation for the text part `index` (sent before its `part_stop` when possible). */
  | { type: "citation"; index: number; citation: Citation }
  | { type: "text_delta"; index: number; text: string }
  | { type: "thinking_delta"; index: number; text: string }
  | { type: "arguments_delta"; index: number; json: string }
  | { type: "signature"; index: number; signature: Signature }
  | { type: "part_stop"; index: number }
  | { type: "usage"; usage: Usage }
  | {
    type: "finish";
    reason: FinishReason;
    stopSequence?: string;
    usage?: Usage;
    /**
     * Long decode: the provider stopped at its per-request output cap and goes on when the same
     * request is sent again with this token (`reason` is then `length`: what a client that is
     * not continued hears). A token the provider sends before its end is no hop end.
     */
    continuation?: string;
  }
  /** `kind` is the closed, vendor-neutral vocabulary each codec maps from and to. */
  | { type: "error"; status: number; kind: ErrorKind; message: string };

/**
 * Provider state a conversation carries: signatures and encrypted reasoning only the family
 * that issued them can read. Such a request stays on targets of that family.
 */
export function boundFamily(req: Request): Family | undefined {
  for (const m of req.messages) {
    for (const p of m.parts) {
      if (p.type === "redacted_thinking") return p.family;
      if ("signature" in p && p.signature) return p.signature.family;
    }
  }
  return undefined;
}

/**
 * Applies one IR stream event to the response it adds up to, its parts built in place: a whole
 * answer decoded as events (Gemini), or a stream kept as the resource it would have been.
 */
export function foldEvent(res: Response, e: StreamEvent): void {
  const part = "index" in e ? res.parts[e.index] : undefined;
  switch (e.type) {
    case "start":
      Object.assign(res, { id: e.id, model: e.model, created: e.created });
      if (e.usage) res.usage = e.usage;
      break;
    case "part_start":
      res.parts[e.index] = e.part.type === "text" || e.part.type === "thinking"
        ? { ...e.part, text: "" }
        : e.part.type === "tool_call"
        ? { ...e.part, arguments: "" }
        : e.part;
      break;
    case "text_delta":
    case "thinking_delta":
      if (part?.type === "text" || part?.type === "thinking") part.text += e.text;
      break;
    case "arguments_delta":
      if (part?.type === "tool_call") part.arguments += e.json;
      break;
    case "citation":
      if (part?.type === "text") (part.citations ??= []).push(e.citation);
      break;
    case "signature":
      if (part?.type === "text" || part?.type === "thinking" || part?.type === "tool_call") {
        part.signature = e.signature;
      }
      break;
    case "usage":
      res.usage = e.usage;
      break;
    case "finish":
      res.finish = e.reason;
      if (e.stopSequence !== undefined) res.stopSequence = e.stopSequence;
      if (e.usage) res.usage = e.usage;
      if (e.continuation !== undefined) res.continuation = e.continuation;
      break;
  }
}

/**
 * A whole response as the stream events it folds back from (`foldEvent`): one answer read as
 * events where events are what a reader takes (a long decode's whole hops).
 */
export function responseEvents(res: Response): StreamEvent[] {
  const out: StreamEvent[] = [{
    type: "start",
    id: res.id,
    model: res.model,
    created: res.created,
  }];
  res.parts.forEach((p, index) => {
    switch (p.type) {
      case "text":
      case "thinking":
        out.push({ type: "part_start", index, part: { type: p.type } });
        if (p.text) {
          const type = p.type === "text" ? "text_delta" : "thinking_delta";
          out.push({ type, index, text: p.text });
        }
        if (p.type === "text") {
          for (const citation of p.citations ?? []) out.push({ type: "citation", index, citation });
        }
        break;
      case "tool_call": {
        const { id, name, kind, signature } = p;
        const part = {
          type: "tool_call" as const,
          id,
          name,
          ...(kind && { kind }),
          ...(signature && { signature }),
        };
        out.push({ type: "part_start", index, part });
        if (p.arguments) out.push({ type: "arguments_delta", index, json: p.arguments });
        break;
      }
      case "redacted_thinking":
      case "hosted_call":
        out.push({ type: "part_start", index, part: p });
        break;
      default:
        return; // inputs (images, results) are no answer's parts
    }
    if ((p.type === "text" || p.type === "thinking") && p.signature) {
      out.push({ type: "signature", index, signature: p.signature });
    }
    out.push({ type: "part_stop", index });
  });
  out.push({
    type: "finish",
    reason: res.finish,
    ...(res.stopSequence !== undefined && { stopSequence: res.stopSequence }),
    ...(res.usage && { usage: res.usage }),
    ...(res.continuation !== undefined && { continuation: res.continuation }),
  });
  return out;
}
