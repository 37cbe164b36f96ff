/** A Responses provider's answer → IR (non-streaming), and what streams share with it. */
import type { DecodeContext } from "../../src/kit/codec.ts";
import { GatewayError, kindForStatus } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import { appendReasoning, reasoningText } from "./carrier.ts";
import { arr, type Json, num, obj, str } from "./read.ts";
import { fromWireUsage } from "./usage.ts";
import { ANTHROPIC_STATUSES, openAiErrorStatus } from "../shared.ts";

export function decodeResponse(body: Json, ctx: DecodeContext): ir.Response {
  if (body.status === "failed") {
    const f = failure(body.error);
    throw new GatewayError(f.status, kindForStatus(f.status, ANTHROPIC_STATUSES), f.message);
  }
  const parts = arr(body.output).flatMap((item) => outputItemParts(obj(item)));
  const res: ir.Response = {
    id: str(body.id) ?? ctx.id,
    model: str(body.model) ?? "",
    created: num(body.created_at) ?? ctx.now,
    parts,
    finish: finishOf(body, parts.some((p) => p.type === "tool_call")),
  };
  const usage = fromWireUsage(body.usage);
  if (usage) res.usage = usage;
  return res;
}

/** One output item's parts (of hosted calls, only web search ones: the gateway asks no others). */
export function outputItemParts(item: Json): ir.Part[] {
  switch (item.type) {
    case "message":
      return arr(item.content).map(obj).flatMap((c) => {
        const text = str(c.text) ?? str(c.refusal);
        if (text === undefined) return [];
        const part: ir.TextPart = { type: "text", text };
        const citations = arr(c.annotations).map(obj).flatMap(citationOf);
        if (citations.length) part.citations = citations;
        return [part];
      });
    case "web_search_call":
      return [webSearchCall(item)];
    case "function_call":
    case "custom_tool_call":
      return [toolCall(item)];
    case "reasoning": {
      const parts: ir.Part[] = [];
      appendReasoning(parts, itemReasoningText(item), str(item.encrypted_content));
      return parts;
    }
    default:
      return [];
  }
}

/** A `url_citation` annotation as an IR citation (other annotation types have no peer). */
export function citationOf(a: Json): ir.Citation[] {
  const url = str(a.url);
  if (a.type !== "url_citation" || !url) return [];
  const c: ir.Citation = { url };
  const title = str(a.title);
  if (title) c.title = title;
  const start = num(a.start_index);
  const end = num(a.end_index);
  if (start !== undefined && end !== undefined) Object.assign(c, { start, end });
  return [c];
}

/** A `web_search_call` item: a search (its queries and sources) or a page it opened. */
function webSearchCall(item: Json): ir.HostedCallPart {
  const action = obj(item.action);
  const part: ir.HostedCallPart = {
    type: "hosted_call",
    id: str(item.id) ?? "",
    kind: action.type === "open_page" ? "web_fetch" : "web_search",
  };
  const url = str(action.url);
  if (action.type === "open_page") {
    if (url) Object.assign(part, { url, results: [{ url }] });
  } else {
    const queries = arr(action.queries).map(String);
    const query = str(action.query);
    part.queries = queries.length ? queries : query ? [query] : [];
    part.results = arr(action.sources).map(obj).flatMap((s) => {
      const u = str(s.url);
      return u ? [{ url: u }] : [];
    });
  }
  if (item.status === "failed") part.error = "unavailable";
  return part;
}

export function toolCall(item: Json): ir.ToolCallPart {
  const custom = item.type === "custom_tool_call";
  return {
    type: "tool_call",
    id: str(item.call_id) ?? "",
    name: str(item.name) ?? "",
    arguments: str(custom ? item.input : item.arguments) ?? "",
    kind: custom ? "custom" : "function",
  };
}

const itemReasoningText = (item: Json) =>
  reasoningText(arr(item.summary).map(obj).map(textOf), arr(item.content).map(obj).map(textOf));

const textOf = (p: Json) => ({ text: str(p.text) ?? "" });

/**
 * The finish reason of a completed or incomplete response (tool calls win, §5.5). Any other
 * status of an answer given as ended (`cancelled`, one still running, one added later) is an
 * error, never a quiet stop; `failed` is answered as its error before this.
 */
export function finishOf(response: Json, calledTools: boolean): ir.FinishReason {
  if (response.status === "incomplete") {
    return obj(response.incomplete_details).reason === "content_filter"
      ? "content_filter"
      : "length";
  }
  if (calledTools) return "tool_calls";
  return response.status === undefined || response.status === "completed" ? "stop" : "error";
}

/** A `response.failed` error or standalone `error` event: its status, code and message. */
export function failure(error: unknown): { status: number; code: string; message: string } {
  const e = obj(error);
  const code = str(e.code) ?? str(e.type) ?? "server_error";
  return {
    status: openAiErrorStatus(e.type, code),
    code,
    message: str(e.message) ?? "the upstream response failed",
  };
}
