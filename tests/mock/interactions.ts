/**
 * Gemini Interactions: `POST /v1beta/interactions` (JSON, or with `stream: true` SSE records
 * typed by `event_type`), and the stored resources `GET|DELETE /v1beta/interactions/{id}`.
 * Written from @google/genai 2.32's declarations (InteractionCreateParams, Interaction,
 * InteractionSSEEvent), independently of the gateway's codec. Like Google it answers with the
 * input step first, signs a function call with a summary-less `thought` step before it, and
 * leaves out `output_text` (the SDK computes it). A `longN` model answers in hops of Google's long
 * decode (long_decode.ts): `requires_continuation` with a `continuation_token` at the
 * per-request cap, the same request again with the token (or, stored, the issuing hop as
 * `previous_interaction_id` and no input) for the rest.
 */
import {
  pieces,
  type Reply,
  SEARCH_CITED,
  SEARCH_RESULTS,
  signature,
  textOf,
  type Usage,
} from "./scenario.ts";
import { generateContent } from "./generate-content.ts";
import { arrayOf, type ErrorDetail, type Json, searchTools, type Vendor } from "./vendor.ts";
import type { WireEvent } from "./wire.ts";

const ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789";
const interactionId = () =>
  "v1_" + Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => ALNUM[b % 36]).join("");
const callId = () => `fc_${crypto.randomUUID().slice(0, 8)}`;

const iso = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z");

function usage(u: Usage) {
  return {
    total_input_tokens: u.input,
    total_cached_tokens: u.cacheRead,
    total_output_tokens: u.output - u.reasoning,
    ...(u.reasoning ? { total_thought_tokens: u.reasoning } : {}),
    total_tokens: u.input + u.output,
    input_tokens_by_modality: [{ modality: "text", tokens: u.input }],
  };
}

const utf8 = (s: string) => new TextEncoder().encode(s).length;

/** The answer text, cited like Google's `url_citation` (UTF-8 byte offsets) after a search. */
function answerText(reply: Reply): Json {
  const text = reply.text ?? "";
  const at = text.indexOf(SEARCH_CITED);
  if (!reply.search || at < 0) return { type: "text", text };
  const [source] = SEARCH_RESULTS;
  return {
    type: "text",
    text,
    annotations: [{
      type: "url_citation",
      url: source.url,
      title: source.title,
      start_index: utf8(text.slice(0, at)),
      end_index: utf8(text.slice(0, at + SEARCH_CITED.length)),
    }],
  };
}

/** The model's steps: search, thought (summary and signature), then text or a signed call. */
function modelSteps(reply: Reply): Json[] {
  const steps: Json[] = [];
  if (reply.search) {
    const id = callId();
    steps.push(
      { type: "google_search_call", id, arguments: { queries: [reply.search.query] } },
      { type: "google_search_result", call_id: id, result: [{ search_suggestions: "<div/>" }] },
    );
  }
  if (reply.reasoning) {
    steps.push({
      type: "thought",
      signature: signature("thought", reply.model),
      summary: [{ type: "text", text: reply.reasoning }],
    });
  }
  if (reply.toolCall) {
    steps.push(
      { type: "thought", signature: signature("call", reply.model) },
      {
        type: "function_call",
        id: callId(),
        name: reply.toolCall.name,
        arguments: JSON.parse(reply.toolCall.arguments),
      },
    );
  }
  if (reply.text !== undefined) steps.push({ type: "model_output", content: [answerText(reply)] });
  return steps;
}

const status = (reply: Reply) => (reply.toolCall ? "requires_action" : "completed");

/** The interactions this mock answered, for GET and DELETE (ids are random: one map serves all). */
const stored = new Map<string, Json>();
const STORED_MAX = 1000;

function keep(resource: Json, body: Json) {
  if (body.store === false) return;
  if (stored.size >= STORED_MAX) stored.delete(stored.keys().next().value!);
  stored.set(resource.id, resource);
}

/** The interaction that issued each continuation token (a stored continuation names it). */
const issuedBy = new Map<string, string>();

/**
 * A create needs `input`, except a continuation hop as the SDK sends it with `store`: the
 * issuing hop as `previous_interaction_id` and no input. The token must be one this mock issued
 * (long_decode.ts checks the rest: the request, the account).
 */
function checkRequest(body: Json): string | undefined {
  const field = (name: string) => `* CreateInteractionRequest.${name}`;
  const token = body.continuation_token;
  const by = token === undefined ? undefined : issuedBy.get(token);
  if (token !== undefined && by === undefined) {
    return `${field("continuation_token")}: invalid token`;
  }
  if (by !== undefined && body.store !== false) {
    if (body.previous_interaction_id !== by) {
      return `${field("previous_interaction_id")}: not the interaction that issued the token`;
    }
    return body.input === undefined
      ? undefined
      : `${field("input")}: must be empty when continuing`;
  }
  return body.input === undefined ? `${field("input")}: input is required` : undefined;
}

/** How a long decode's hop ends (long_decode.ts). */
const HOP_STATUS = {
  continue: "requires_continuation",
  max_tokens: "incomplete",
  stop: undefined,
} as const;

function resource(reply: Reply, body: Json, id = interactionId()): Json {
  const now = iso();
  const input = typeof body.input === "string"
    ? [{ type: "user_input", content: [{ type: "text", text: body.input }] }]
    : [];
  const token = reply.hop?.token;
  if (token) {
    if (issuedBy.size >= STORED_MAX) issuedBy.delete(issuedBy.keys().next().value!);
    issuedBy.set(token, id);
  }
  return {
    id,
    model: reply.model,
    status: reply.finish ?? (reply.hop && HOP_STATUS[reply.hop.end]) ?? status(reply),
    ...(token && { continuation_token: token }),
    created: now,
    updated: now,
    steps: [...input, ...modelSteps(reply)],
    usage: usage(reply.usage),
  };
}

const event = (eventType: string, fields: Json, delta = false): WireEvent => ({
  event: eventType,
  data: { event_type: eventType, ...fields },
  delta,
});

/** One step as start, deltas (text, summaries and arguments in pieces) and stop. */
function stepEvents(step: Json, index: number, n: number): WireEvent[] {
  const start = (s: Json) => event("step.start", { index, step: s });
  const delta = (d: Json) => event("step.delta", { index, delta: d }, true);
  const stop = event("step.stop", { index });
  switch (step.type) {
    case "thought": {
      const summary = step.summary?.[0]?.text ?? "";
      return [
        start({ type: "thought" }),
        ...pieces(summary, n).map((text) =>
          delta({ type: "thought_summary", content: { type: "text", text } })
        ),
        delta({ type: "thought_signature", signature: step.signature }),
        stop,
      ];
    }
    case "model_output": {
      const [{ text, annotations }] = step.content;
      return [
        start({ type: "model_output" }),
        ...pieces(text, n).map((t) => delta({ type: "text", text: t })),
        ...(annotations ? [delta({ type: "text_annotation_delta", annotations })] : []),
        stop,
      ];
    }
    case "function_call":
      return [
        start({ ...step, arguments: {} }),
        delta({ type: "arguments_delta", arguments: JSON.stringify(step.arguments) }),
        stop,
      ];
    default:
      return [start(step), stop];
  }
}

function events(reply: Reply, body: Json): WireEvent[] {
  const full = resource(reply, body);
  keep(full, body);
  const { id, model, created, continuation_token } = full;
  const head = { id, model, object: "interaction", created };
  const steps: Json[] = full.steps.filter((s: Json) => s.type !== "user_input");
  return [
    event("interaction.created", { interaction: { ...head, status: "in_progress" } }),
    event("interaction.status_update", { interaction_id: id, status: "in_progress" }),
    ...steps.flatMap((s, i) => stepEvents(s, i, reply.textPieces)),
    event("interaction.completed", {
      interaction: {
        ...head,
        status: full.status,
        ...(continuation_token && { continuation_token }),
        updated: iso(),
        usage: full.usage,
      },
    }),
  ];
}

/** The last user text, or the result of a function call the input ends with. */
function turn(body: Json) {
  const input = body.input;
  if (typeof input === "string") return { userText: input };
  // A stored continuation hop sends no input: the text it continues was planned before.
  if (input === undefined) return { userText: "" };
  const items = Array.isArray(input) ? input : [input];
  const user = items.findLast((s: Json) => s?.type === "user_input");
  const userText = user ? textOf(user.content, () => true) : textOf(items, () => true);
  const last = items.at(-1);
  if (last?.type !== "function_result") return { userText };
  const result = last.result;
  return { userText, toolResult: typeof result === "string" ? result : JSON.stringify(result) };
}

export const interactions: Vendor = {
  name: "interactions",
  jsonContentType: "application/json; charset=UTF-8",
  turn,
  toolNames: (body) => arrayOf(body.tools).filter((t) => t?.type === "function").map((t) => t.name),
  hostedSearch: (body) => searchTools(arrayOf(body.tools), (t) => t?.type === "google_search"),
  validate: checkRequest,
  json(reply, body) {
    const r = resource(reply, body);
    keep(r, body);
    return r;
  },
  events,
  error: generateContent.error,
  streamError: (status: number, detail?: ErrorDetail) => {
    const body = generateContent.error(status, detail).body as {
      error: { status: string; message: string };
    };
    return event("error", { error: { code: body.error.status, message: body.error.message } });
  },
  headers: generateContent.headers,
  badJson: generateContent.badJson,
  notFound: generateContent.notFound,
  longDecode: {
    budget: (body) => body.generation_config?.max_output_tokens,
    token: (body) => body.continuation_token,
    // A stored continuation leaves out what the issuing interaction holds.
    request: ({ continuation_token: _, ...rest }) => {
      if (rest.store === false) return rest;
      const { input: _input, previous_interaction_id: _previous, ...kept } = rest;
      return kept;
    },
    unaryLimit: false,
  },
};

/**
 * `GET` (JSON; the SDK always adds `?stream=false`) and `DELETE` (`{}`) of a stored interaction,
 * or undefined for any other path. An unknown id is Google's 404.
 */
export function interactionResource(method: string, path: string): Response | undefined {
  const id = path.match(/^\/v1beta\/interactions\/([^/]+)$/)?.[1];
  if (id === undefined || (method !== "GET" && method !== "DELETE")) return undefined;
  const found = stored.get(decodeURIComponent(id));
  const json = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": interactions.jsonContentType, ...interactions.headers() },
    });
  if (!found) {
    return json({
      error: { code: 404, message: `Interaction ${id} not found.`, status: "NOT_FOUND" },
    }, 404);
  }
  if (method === "DELETE") {
    stored.delete(found.id);
    return json({});
  }
  return json(found);
}
