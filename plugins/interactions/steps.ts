/**
 * Shapes every direction of the Interactions format shares: model steps made from IR parts,
 * usage, status and times. Interactions carries Gemini's thought signatures on `thought` steps
 * only (a `function_call` step has no signature field): a signed tool call is a summary-less
 * `thought` step holding the signature, directly before the call.
 */
import type * as ir from "../../src/kit/ir.ts";
import { argumentsObject, nonEmpty, REDACTED } from "../shared.ts";
import { byteLength, citedSpan } from "../hosted.ts";

/** The models behind Interactions are Gemini's: generate-content reads their signatures too. */
export const FAMILY: ir.Family = "gemini";

type Obj = Record<string, unknown>;

/** How a signature goes into a `thought` step's slot (carried or, upstream, only its own). */
export type SignatureSlot = (sig: ir.Signature | undefined) => string | undefined;

const thought = (signature: string | undefined, summary?: string): Obj => ({
  type: "thought",
  ...(signature !== undefined && { signature }),
  ...(summary && { summary: [{ type: "text", text: summary }] }),
});

/** A cited web source as a `url_citation` annotation (Google offsets are UTF-8 bytes). */
export function annotation(c: ir.Citation, text: string): Obj {
  const { start, end } = citedSpan(c, text);
  return {
    type: "url_citation",
    url: c.url,
    ...(c.title !== undefined && { title: c.title }),
    start_index: byteLength(text.slice(0, start)),
    end_index: byteLength(text.slice(0, end)),
  };
}

export const textContent = (p: ir.TextPart): Obj => ({
  type: "text",
  text: p.text,
  ...(p.citations?.length && { annotations: p.citations.map((c) => annotation(c, p.text)) }),
});

export const functionCallStep = (
  p: Pick<ir.ToolCallPart, "id" | "name" | "arguments" | "kind">,
) => ({
  type: "function_call",
  id: p.id,
  name: p.name,
  arguments: argumentsObject(p),
});

/** A hosted run as its call and result steps. */
function hostedSteps(p: ir.HostedCallPart): Obj[] {
  if (p.kind === "web_fetch") {
    const urls = p.url === undefined ? [] : [p.url];
    return [
      { type: "url_context_call", id: p.id, arguments: { urls } },
      {
        type: "url_context_result",
        call_id: p.id,
        ...(p.error !== undefined && { is_error: true }),
        result: urls.map((url) => ({ url, status: p.error === undefined ? "success" : "error" })),
      },
    ];
  }
  return [
    { type: "google_search_call", id: p.id, arguments: { queries: p.queries ?? [] } },
    {
      type: "google_search_result",
      call_id: p.id,
      ...(p.error !== undefined && { is_error: true }),
      result: [],
    },
  ];
}

/**
 * The model steps of one assistant part. A text part's signature follows it as a thought
 * step; a tool call's precedes it (see above).
 */
export function modelSteps(p: ir.Part, slot: SignatureSlot): Obj[] {
  switch (p.type) {
    case "text": {
      const sig = slot(p.signature);
      const text = p.text ? [{ type: "model_output", content: [textContent(p)] }] : [];
      return sig === undefined ? text : [...text, thought(sig)];
    }
    case "thinking": {
      const sig = slot(p.signature);
      return sig === undefined && !p.text ? [] : [thought(sig, p.text)];
    }
    case "redacted_thinking": {
      // It has no Interactions form: it rides in a thought signature, marked (see Marker).
      const sig = slot({ family: p.family, value: REDACTED + p.data });
      return sig === undefined ? [] : [thought(sig)];
    }
    case "tool_call": {
      const sig = slot(p.signature);
      return [...(sig === undefined ? [] : [thought(sig)]), functionCallStep(p)];
    }
    case "hosted_call":
      return hostedSteps(p);
    default:
      return [];
  }
}

// ---- status ----

const STATUS: Record<ir.FinishReason, string> = {
  stop: "completed",
  tool_calls: "requires_action",
  length: "incomplete",
  content_filter: "incomplete",
  pause: "incomplete",
  error: "failed",
};

export const statusOf = (finish: ir.FinishReason): string => STATUS[finish];

/**
 * An upstream's final status as a finish reason (a call-ending answer is `tool_calls`). A
 * decode stopped at a limit is cut short (`requires_continuation`: the per-request cap, which
 * the token in `continuationOf` goes on from); any status that is not a success — `failed`,
 * `cancelled`, one still running or one added later — is an error, never a quiet stop.
 */
export function finishOf(status: unknown, sawToolCall: boolean): ir.FinishReason {
  if (status === "requires_continuation") return "length";
  if (status === "requires_action" || sawToolCall) return "tool_calls";
  if (status === "incomplete" || status === "budget_exceeded") return "length";
  return status === "completed" ? "stop" : "error";
}

/** The token an interaction that stopped at the per-request cap goes on with. */
export function continuationOf(interaction: Obj): { continuation?: string } {
  const continuation = interaction.status === "requires_continuation"
    ? nonEmpty(interaction.continuation_token)
    : undefined;
  return continuation ? { continuation } : {};
}

// ---- usage ----

/** Like Gemini's `candidatesTokenCount`, `total_output_tokens` leaves thoughts out. */
export function encodeUsage(u: ir.Usage): Obj {
  const reasoning = u.reasoningTokens ?? 0;
  return {
    total_input_tokens: u.inputTokens,
    total_output_tokens: u.outputTokens - reasoning,
    ...(reasoning && { total_thought_tokens: reasoning }),
    ...(u.cacheReadTokens && { total_cached_tokens: u.cacheReadTokens }),
    total_tokens: u.inputTokens + u.outputTokens,
  };
}

const count = (v: unknown) => (typeof v === "number" ? v : 0);

export function decodeUsage(usage: unknown): ir.Usage | undefined {
  if (typeof usage !== "object" || usage === null) return undefined;
  const u = usage as Obj;
  const out: ir.Usage = {
    inputTokens: count(u.total_input_tokens) + count(u.total_tool_use_tokens),
    outputTokens: count(u.total_output_tokens) + count(u.total_thought_tokens),
  };
  if (typeof u.total_cached_tokens === "number") out.cacheReadTokens = u.total_cached_tokens;
  if (typeof u.total_thought_tokens === "number") out.reasoningTokens = u.total_thought_tokens;
  return out;
}

// ---- times ----

/** Unix seconds as the ISO 8601 time Interactions carries (`2026-05-20T10:00:00Z`). */
export const isoTime = (seconds: number): string =>
  new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

/** An ISO time back to Unix seconds, or `fallback` when it does not parse. */
export function unixTime(value: unknown, fallback: number): number {
  const ms = typeof value === "string" ? Date.parse(value) : NaN;
  return Number.isNaN(ms) ? fallback : Math.floor(ms / 1000);
}
