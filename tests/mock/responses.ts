/**
 * OpenAI Responses: `POST /v1/responses` (JSON or SSE), the same events over the WebSocket
 * (see websocket.ts), and `POST /v1/responses/compact`.
 */
import { ids, nowSeconds } from "./ids.ts";
import {
  OPENAI_BAD_JSON,
  openaiError,
  openaiErrorObject,
  openaiHeaders,
  openaiNotFound,
} from "./openai.ts";
import {
  pieces,
  type Reply,
  SEARCH_CITED,
  SEARCH_RESULTS,
  signature,
  textOf,
  type ToolCall,
  type Usage,
  usageFor,
} from "./scenario.ts";
import { arrayOf, type Json, searchTools, type Vendor } from "./vendor.ts";
import { typed, type WireEvent } from "./wire.ts";

const isInputText = (p: Json) => p.type === "input_text" || p.type === "output_text";
const isUserMessage = (item: Json) =>
  item?.role === "user" && (item.type === undefined || item.type === "message");

export function responsesUsage(u: Usage) {
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cacheRead, cache_write_tokens: u.cacheWrite },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
}

const NO_USAGE: Usage = { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, reasoning: 0 };

/** An output item: its final form, and the events that stream it at `outputIndex`. */
interface ItemPlan {
  item: Json;
  stream(outputIndex: number): WireEvent[];
}

const event = (type: string, fields: Json, delta = false) => typed({ type, ...fields }, delta);

function reasoningItem(text: string, model: string): ItemPlan {
  const id = ids.reasoning();
  const part = (t: string) => ({ type: "summary_text", text: t });
  const item = {
    id,
    type: "reasoning",
    summary: [part(text)],
    encrypted_content: `gAAAAA${signature("reasoning", model)}`,
  };
  return {
    item,
    stream: (output_index) => {
      const at = { item_id: id, output_index, summary_index: 0 };
      return [
        event("response.output_item.added", {
          output_index,
          item: { id, type: "reasoning", summary: [] },
        }),
        event("response.reasoning_summary_part.added", { ...at, part: part("") }),
        ...pieces(text, 3).map((delta) =>
          event("response.reasoning_summary_text.delta", { ...at, delta }, true)
        ),
        event("response.reasoning_summary_text.done", { ...at, text }),
        event("response.reasoning_summary_part.done", { ...at, part: part(text) }),
        event("response.output_item.done", { output_index, item }),
      ];
    },
  };
}

/**
 * A `web_search_call` item: it opens with only `action.type`, reports its progress, and ends
 * with the query (and the sources, when `include` asked for web_search_call.action.sources).
 */
function webSearchItem(query: string, body: Json): ItemPlan {
  const id = `ws_${ids.responseMessage().slice("msg_".length)}`;
  const sources = arrayOf(body.include).includes("web_search_call.action.sources")
    ? { sources: SEARCH_RESULTS.map((r) => ({ type: "url", url: r.url })) }
    : {};
  const item = {
    id,
    type: "web_search_call",
    status: "completed",
    action: { type: "search", query, ...sources },
  };
  return {
    item,
    stream: (output_index) => [
      event("response.output_item.added", {
        output_index,
        item: { id, type: "web_search_call", status: "in_progress", action: { type: "search" } },
      }),
      ...["in_progress", "searching", "completed"].map((phase) =>
        event(`response.web_search_call.${phase}`, { output_index, item_id: id })
      ),
      event("response.output_item.done", { output_index, item }),
    ],
  };
}

/** The `url_citation` OpenAI puts on the cited span (character offsets). */
function citationOf(text: string) {
  const start = text.indexOf(SEARCH_CITED);
  if (start < 0) return [];
  return [{
    type: "url_citation",
    end_index: start + SEARCH_CITED.length,
    start_index: start,
    title: SEARCH_RESULTS[0].title,
    url: `${SEARCH_RESULTS[0].url}?utm_source=openai`,
  }];
}

function messageItem(text: string, cited = false, textPieces = 3): ItemPlan {
  const id = ids.responseMessage();
  const annotations = cited ? citationOf(text) : [];
  const part = (t: string, a: Json[] = []) => ({
    type: "output_text",
    annotations: a,
    logprobs: [],
    text: t,
  });
  const message = (status: string, content: Json[]) => ({
    id,
    type: "message",
    status,
    content,
    role: "assistant",
  });
  const item = message("completed", [part(text, annotations)]);
  return {
    item,
    stream: (output_index) => {
      const at = { item_id: id, output_index, content_index: 0 };
      return [
        event("response.output_item.added", { output_index, item: message("in_progress", []) }),
        event("response.content_part.added", { ...at, part: part("") }),
        ...pieces(text, textPieces).map((delta) =>
          event("response.output_text.delta", { ...at, delta, logprobs: [] }, true)
        ),
        ...annotations.map((annotation, annotation_index) =>
          event("response.output_text.annotation.added", { ...at, annotation_index, annotation })
        ),
        event("response.output_text.done", { ...at, text, logprobs: [] }),
        event("response.content_part.done", { ...at, part: part(text, annotations) }),
        event("response.output_item.done", { output_index, item }),
      ];
    },
  };
}

function functionCallItem({ name, arguments: args }: ToolCall): ItemPlan {
  const id = ids.functionCall();
  const call_id = ids.call();
  const call = (status: string, a: string) => ({
    id,
    type: "function_call",
    status,
    arguments: a,
    call_id,
    name,
  });
  const item = call("completed", args);
  return {
    item,
    stream: (output_index) => [
      event("response.output_item.added", { output_index, item: call("in_progress", "") }),
      ...pieces(args, 2).map((delta) =>
        event("response.function_call_arguments.delta", { item_id: id, output_index, delta }, true)
      ),
      event("response.function_call_arguments.done", {
        item_id: id,
        output_index,
        name,
        arguments: args,
      }),
      event("response.output_item.done", { output_index, item }),
    ],
  };
}

function itemPlans(reply: Reply, body: Json): ItemPlan[] {
  const plans: ItemPlan[] = [];
  if (reply.search) plans.push(webSearchItem(reply.search.query, body));
  if (reply.reasoning) plans.push(reasoningItem(reply.reasoning, reply.model));
  if (reply.text !== undefined) {
    plans.push(messageItem(reply.text, reply.search !== undefined, reply.textPieces));
  }
  if (reply.toolCall) plans.push(functionCallItem(reply.toolCall));
  return plans;
}

/** A Response object echoing the request parameters, as the API returns it. */
function responseObject(
  id: string,
  model: string,
  body: Json,
  status: string,
  output: Json[],
  usage: Json,
) {
  return {
    id,
    object: "response",
    created_at: nowSeconds(),
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: "text" } },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: "disabled",
    usage,
    user: null,
    metadata: body.metadata ?? {},
  };
}

/** Numbers the events (`sequence_number` right after `type`, as the API orders it). */
function sequenced(events: WireEvent[]): WireEvent[] {
  return events.map((e, i) => {
    const data = e.data as Json;
    return { ...e, data: { type: data.type, sequence_number: i, ...data } };
  });
}

/** The streamed events of a reply, and the response id they carry. */
export function responseStream(
  reply: Reply,
  body: Json,
): { id: string; events: WireEvent[] } {
  const id = ids.response();
  const plans = itemPlans(reply, body);
  const response = (status: string, output: Json[], usage: Json) =>
    responseObject(id, reply.model, body, status, output, usage);
  const started = response("in_progress", [], null);
  const events = [
    event("response.created", { response: started }),
    event("response.in_progress", { response: started }),
    ...plans.flatMap((p, i) => p.stream(i)),
    event("response.completed", {
      response: response("completed", plans.map((p) => p.item), responsesUsage(reply.usage)),
    }),
  ];
  return { id, events: sequenced(events) };
}

/** WebSocket `generate:false` warm-up: `response.created`, then an empty `response.completed`. */
export function warmupStream(model: string, body: Json): { id: string; events: WireEvent[] } {
  const id = ids.response();
  const events = [
    event("response.created", {
      response: responseObject(id, model, body, "in_progress", [], null),
    }),
    event("response.completed", {
      response: responseObject(id, model, body, "completed", [], responsesUsage(NO_USAGE)),
    }),
  ];
  return { id, events: sequenced(events) };
}

/** `/v1/responses/compact`: the user messages of the input, then one compaction item. */
export function compactJson(body: Json) {
  const input = typeof body.input === "string"
    ? [{ role: "user", content: body.input }]
    : arrayOf(body.input);
  const users = input.filter(isUserMessage).map((m) => ({
    type: "message",
    role: "user",
    content: typeof m.content === "string" ? [{ type: "input_text", text: m.content }] : m.content,
  }));
  const compaction = {
    type: "compaction",
    id: ids.compaction(),
    encrypted_content: `gAAAAA${signature("compaction", `${body.model}:${input.length}`)}`,
  };
  return {
    id: ids.response(),
    object: "response.compaction",
    created_at: nowSeconds(),
    output: [...users, compaction],
    usage: responsesUsage(usageFor(false)),
  };
}

function toolOutputText(output: unknown): string {
  return typeof output === "string" ? output : textOf(output, isInputText);
}

export const responses: Vendor = {
  name: "responses",
  jsonContentType: "application/json",
  turn(body) {
    if (typeof body.input === "string") return { userText: body.input };
    const items = arrayOf(body.input);
    const userText = textOf(items.findLast(isUserMessage)?.content, isInputText);
    const last = items.at(-1);
    if (last?.type !== "function_call_output") return { userText };
    return { userText, toolResult: toolOutputText(last.output) };
  },
  toolNames: (body) => arrayOf(body.tools).map((t) => t?.name).filter(Boolean),
  hostedSearch: (body) =>
    searchTools(arrayOf(body.tools), (t) => String(t?.type).startsWith("web_search")),
  validate: () => undefined,
  json: (reply, body) => {
    const outputs = itemPlans(reply, body).map((p) => p.item);
    const usage = responsesUsage(reply.usage);
    const status = reply.finish ?? "completed";
    return responseObject(ids.response(), reply.model, body, status, outputs, usage);
  },
  events: (reply, body) => responseStream(reply, body).events,
  error: openaiError("input"),
  streamError: (status, detail) => {
    const e = openaiErrorObject(status, "input", detail);
    const event: Json = {
      type: "error",
      code: e.code ?? e.type,
      message: e.message,
      param: e.param,
    };
    return typed(event);
  },
  headers: openaiHeaders,
  badJson: OPENAI_BAD_JSON,
  notFound: openaiNotFound,
};
