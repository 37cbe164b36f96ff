/**
 * Google's long decode as the Gemini mocks answer it (generateContent and Interactions), written
 * from ai.google.dev/gemini-api/docs/generate-content/long-decode and @google/genai's automatic
 * continuation, independently of the gateway:
 * - a request decodes at most STREAM_CAP output tokens; a non-streaming generateContent request
 *   at most UNARY_CAP, and asking for more than that without a token is a 400;
 * - the output budget (`maxOutputTokens`, `max_output_tokens`; absent: the request's cap) is one
 *   total across hops;
 * - a hop that reaches the cap with budget left ends to continue, with a token; one that spends
 *   the budget ends at the token limit (with a token too); the last one ends the answer;
 * - the next hop is the same request again with the token (anything else changed is a 400, and
 *   so is a token this mock never issued, or issued to another key: another account);
 * - each hop re-reads the prompt and all the answer so far: its prompt count grows.
 *
 * A `longN` model's answer needs N hops when streamed: N − 1 full ones and a short last one
 * (`hopcapN`: a model whose per-request cap is N tokens).
 * Hop texts name their token range, the first after the reply's own text, so a client that got
 * every hop once, in order, reads `Hello from … mock: hi (0-65536)(65536-131072)(131072-132072)`.
 */
import type { Reply } from "./scenario.ts";
import type { Json } from "./vendor.ts";

export const STREAM_CAP = 65_536;
export const UNARY_CAP = 32_768;
/** The last hop's output in a `longN` answer. */
export const LAST_HOP = 1_000;

/** What a format's request says of long decode. */
export interface LongDecodeSide {
  /** The output budget across hops, if the request sets one. */
  budget(body: Json): number | undefined;
  /** The token the request continues with. */
  token(body: Json): string | undefined;
  /** The request as it must be resent (token and what a stored continuation leaves out removed). */
  request(body: Json): Json;
  /**
   * Whether a non-streaming request decodes at most UNARY_CAP and is refused a larger budget
   * without a token (generateContent's rule); else every request's cap is STREAM_CAP.
   */
  unaryLimit: boolean;
}

/** One hop: its number, the answer's output tokens [from, to), why it stopped, and its token. */
export interface Hop {
  index: number;
  from: number;
  to: number;
  end: "continue" | "max_tokens" | "stop";
  token?: string;
}

/** The tokens issued: where each goes on, for which request and account. */
const issued = new Map<string, { hop: number; at: number; request: string; account: string }>();
const ISSUED_MAX = 1000;

/** JSON with sorted keys: the same request serialized by another client compares equal. */
function canonical(v: Json): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  return `{${
    Object.keys(v).sort().filter((k) => v[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")
  }}`;
}

/**
 * The hop `body` gets from a `longN` model (`hops` = N; `cap`: its per-request cap, if not
 * Gemini 4 Argon's), or Google's 400 message. `account`: the credential the request came with.
 */
export function planHop(
  side: LongDecodeSide,
  body: Json,
  streamed: boolean,
  model: { hops: number; cap?: number; overrun?: boolean },
  account: string,
): Hop | string {
  const token = side.token(body);
  const request = canonical(side.request(body));
  let from = 0;
  let index = 1;
  if (token !== undefined) {
    const resumed = issued.get(token);
    if (!resumed || resumed.account !== account) return "continuation token is invalid or expired";
    if (resumed.request !== request) {
      return "the request differs from the one the continuation token was issued for";
    }
    from = resumed.at;
    index = resumed.hop + 1;
  }
  // A model may cap a request lower than Gemini 4 Argon does.
  const streamCap = model.cap ?? STREAM_CAP;
  const cap = streamed || !side.unaryLimit ? streamCap : Math.min(streamCap, UNARY_CAP);
  const budget = side.budget(body);
  if (side.unaryLimit && !streamed && token === undefined && (budget ?? 0) > UNARY_CAP) {
    return `max_output_tokens above ${UNARY_CAP} needs streamGenerateContent or a continuation token`;
  }
  const need = (model.hops - 1) * streamCap + LAST_HOP;
  // A faulty provider (`overrun`) would go on past the budget.
  const left = model.overrun ? Infinity : (budget ?? cap) - from;
  const to = from + Math.max(0, Math.min(cap, left, need - from));
  const end = to === need ? "stop" : to - from === left ? "max_tokens" : "continue";
  if (end === "stop") return { index, from, to, end };
  const next = "ct_" + crypto.randomUUID();
  if (issued.size >= ISSUED_MAX) issued.delete(issued.keys().next().value!);
  issued.set(next, { hop: index, at: to, request, account });
  return { index, from, to, end, token: next };
}

/** The reply a hop sends: its slice of the answer, and its own usage (the prompt re-read). */
export function hopReply(reply: Reply, hop: Hop): Reply {
  const lead = hop.from === 0 && reply.text !== undefined ? `${reply.text} ` : "";
  const { input, cacheRead, cacheWrite } = reply.usage;
  return {
    ...reply,
    reasoning: undefined,
    toolCall: undefined,
    text: `${lead}(${hop.from}-${hop.to})`,
    usage: {
      input: input + hop.from,
      cacheRead,
      cacheWrite,
      output: hop.to - hop.from,
      reasoning: 0,
    },
    hop,
  };
}
