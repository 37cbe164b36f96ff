/**
 * What the mock replies: the scenario picked from the model name, and the vendor-neutral
 * reply (reasoning, text or tool call, usage) that each vendor module renders in its format.
 */

import type { Hop } from "./long_decode.ts";

/** Milliseconds a `stall` stream goes quiet after its first event(s). */
export const STALL_MS = 60_000;
/** Milliseconds between events of a `slow` stream. */
export const SLOW_MS = 300;

/**
 * Flags read from the model name (case-insensitive substrings; they combine, e.g.
 * `think-tool` reasons and then calls a tool, `slow-think` reasons slowly).
 */
export interface Scenario {
  /**
   * errNNN (400, 401, 403, 408, 429, 500, 502, 503, 529): fail with this HTTP status and the vendor envelope;
   * `errNNNhtml` / `errNNNtext` send an nginx-like HTML page or plain text instead.
   */
  error?: number;
  errorBody?: "html" | "text";
  /**
   * `echo`: every error (HTTP body, stream error event, WebSocket frame) quotes the key, and so
   * does a successful answer's text.
   */
  echo: boolean;
  /** `hang`: send no response headers at all. */
  hang: boolean;
  /** `silent`: send the headers, then no body byte. */
  silent: boolean;
  /**
   * Stream the first events and some text, then stop (no terminal event): `cut` resets the
   * connection between events, `cutmid` inside one; `close` and `closemid` end it cleanly.
   */
  cut: boolean;
  cutHow: "reset" | "close";
  cutInside: boolean;
  /** `badjson`: a non-stream body that is not JSON; in a stream, one event's JSON broken. */
  badJson: boolean;
  /**
   * `garbled`: in a stream, one event's JSON broken inside, its first and last characters kept
   * (it looks whole to a relay's cheap check; only a parse finds it), and the stream goes on.
   */
  garbled: boolean;
  /** `errevent`: a stream that sends the vendor's in-stream error event where `cut` would stop. */
  errEvent: boolean;
  /**
   * `earlyerr`: a 200 stream whose opening events (no content yet) are followed by the vendor's
   * in-stream overloaded error (Anthropic `overloaded_error` after `message_start`, Responses
   * `response.failed`).
   */
  earlyErr: boolean;
  /** `keyerrNNN`: fail with this status when the provider key contains `revoked`. */
  keyError?: number;
  /** `ctype`: a 200 whose body is an HTML page (content type text/html). */
  wrongType: boolean;
  /** `huge`: a reply text of HUGE_CHARS characters. */
  huge: boolean;
  /** `chunksN`: stream the reply text in N deltas (default 3). */
  textPieces: number;
  /** Send the first event(s), then nothing for STALL_MS. */
  stall: boolean;
  /**
   * `linger`: send every content fragment but the last (Gemini's last chunk carries the end) or
   * all of them, then nothing for STALL_MS before the events that end the stream and carry its
   * usage: a client that read the text leaves before the usage comes.
   */
  linger: boolean;
  /** Pause between stream events (SLOW_MS for `slow`). */
  delayMs: number;
  /** Reasoning before the answer. */
  think: boolean;
  /** Answer with a tool call (unless the last turn is a tool result). */
  tool: boolean;
  /** Run the vendor's hosted web search when the request declares it. */
  search: boolean;
  /**
   * `longN` (Gemini formats): an answer of N hops of Google's long decode (`long`: 2), see
   * long_decode.ts.
   */
  long?: number;
  /**
   * `finishX`: the answer ends with the vendor's own finish reason or status X (`finishother`:
   * Gemini's `OTHER`; `finishcancelled`: an interaction's, or a JSON Responses answer's,
   * `cancelled`; `finisherror`: chat's `error`; Anthropic's and Bedrock's stop reason as is).
   */
  finish?: string;
  /** `hopcapN`: the model's per-request output cap is N tokens (default: Gemini 4's). */
  hopCap?: number;
  /** `overrun`: a long decode that goes on past the request's budget (a provider's fault). */
  overrun: boolean;
  /**
   * A long decode's hop N fails: `hopfailN` is refused with a 503, `hopcutN` has its stream cut,
   * `hoperrN` sends the in-stream error event (as `errevent`).
   */
  failHop?: number;
  cutHop?: number;
  errHop?: number;
  /**
   * `websearch`: call the client's own web search function (Claude Code's WebSearch, Gemini
   * CLI's google_web_search) with SEARCH_QUERY, which then runs a hosted search sub-request.
   */
  webSearch: boolean;
}

/** Characters of a `huge` reply. */
export const HUGE_CHARS = 1024 * 1024;

export function parseScenario(model: string): Scenario {
  const m = model.toLowerCase();
  const err = m.match(/(?<!key|hop)err(400|401|403|408|429|500|502|503|529)(html|text)?/);
  const keyErr = m.match(/keyerr(401|403|429)/);
  const cut = m.match(/(?<!hop)(cut|close)(mid)?/);
  const long = m.match(/long(\d*)/);
  return {
    error: err ? Number(err[1]) : undefined,
    errorBody: err?.[2] as Scenario["errorBody"],
    echo: m.includes("echo"),
    hang: m.includes("hang"),
    silent: m.includes("silent"),
    cut: cut !== null,
    cutHow: cut?.[1] === "close" ? "close" : "reset",
    cutInside: cut?.[2] === "mid",
    badJson: m.includes("badjson"),
    garbled: m.includes("garbled"),
    errEvent: m.includes("errevent"),
    earlyErr: m.includes("earlyerr"),
    keyError: keyErr ? Number(keyErr[1]) : undefined,
    wrongType: m.includes("ctype"),
    huge: m.includes("huge"),
    textPieces: Number(m.match(/chunks(\d+)/)?.[1] ?? 3),
    stall: m.includes("stall"),
    linger: m.includes("linger"),
    delayMs: m.includes("slow") ? SLOW_MS : 0,
    think: m.includes("think"),
    tool: m.includes("tool"),
    search: m.includes("search"),
    long: long ? Number(long[1] || 2) : undefined,
    finish: m.match(/finish([a-z_]+)/)?.[1],
    hopCap: Number(m.match(/hopcap(\d+)/)?.[1] ?? 0) || undefined,
    overrun: m.includes("overrun"),
    failHop: Number(m.match(/hopfail(\d+)/)?.[1] ?? 0) || undefined,
    cutHop: Number(m.match(/hopcut(\d+)/)?.[1] ?? 0) || undefined,
    errHop: Number(m.match(/hoperr(\d+)/)?.[1] ?? 0) || undefined,
    webSearch: m.includes("websearch"),
  };
}

/** The part of the conversation the reply depends on. */
export interface Turn {
  /** Text of the last user turn ("" when there is none). */
  userText: string;
  /** Set when the last turn carries a tool result: its content as text. */
  toolResult?: string;
}

/**
 * Token counts, the same for every vendor, chosen distinct so that tests can check usage
 * conversions. `input` includes the cache reads and writes; `output` includes reasoning.
 *
 * | vendor    | fields (text reply; think adds REASONING to output and reports it)                   |
 * |-----------|--------------------------------------------------------------------------------------|
 * | chat      | prompt_tokens 11 (cached_tokens 3, cache_write_tokens 2), completion_tokens 7, total 18 |
 * | responses | input_tokens 11 (cached_tokens 3, cache_write_tokens 2), output_tokens 7, total 18     |
 * | messages  | input_tokens 6, cache_read_input_tokens 3, cache_creation_input_tokens 2, output 7     |
 * | gemini    | promptTokenCount 11 (cachedContentTokenCount 3), candidatesTokenCount 7, total 18      |
 * | converse  | inputTokens 6, cacheReadInputTokens 3, cacheWriteInputTokens 2, outputTokens 7, total 18 |
 *
 * With `think`: output 12 including reasoning 5 (chat reasoning_tokens, responses
 * reasoning_tokens, messages output_tokens_details.thinking_tokens); Gemini keeps
 * candidatesTokenCount 7 and adds thoughtsTokenCount 5 (total 23).
 */
export const TOKENS = { input: 11, cacheRead: 3, cacheWrite: 2, text: 7, reasoning: 5 } as const;

export interface Usage {
  input: number;
  cacheRead: number;
  /** Cache writes, the one-hour ones (`cacheWrite1h`) included. */
  cacheWrite: number;
  cacheWrite1h?: number;
  /** Output tokens including reasoning. */
  output: number;
  reasoning: number;
}

export function usageFor(think: boolean): Usage {
  const reasoning = think ? TOKENS.reasoning : 0;
  const { input, cacheRead, cacheWrite } = TOKENS;
  return { input, cacheRead, cacheWrite, output: TOKENS.text + reasoning, reasoning };
}

export interface ToolCall {
  name: string;
  /** JSON text, as Chat and Responses carry it. */
  arguments: string;
}

/** What the mock's hosted web search finds (every vendor renders the same two pages). */
export const SEARCH_RESULTS = [
  { url: "https://deno.com/blog/v3", title: "Deno 3 is here", pageAge: "April 30, 2026" },
  { url: "https://docs.deno.com/runtime/", title: "Deno runtime docs", pageAge: undefined },
] as const;

/** The answer after a search; it cites SEARCH_RESULTS[0] on `SEARCH_CITED`. */
export const SEARCH_CITED = "Deno 3 is here";

/** What the `websearch` scenario asks the client's web search function for. */
export const SEARCH_QUERY = "deno 3 release date";

export interface Search {
  query: string;
}

export interface Reply {
  /** The format id of the vendor replying (see vendor.ts `name`). */
  vendor: string;
  model: string;
  /** A hosted web search runs first (its results are SEARCH_RESULTS). */
  search?: Search;
  reasoning?: string;
  /** Set unless the reply is a tool call. */
  text?: string;
  /** How many stream deltas carry the text. */
  textPieces: number;
  toolCall?: ToolCall;
  usage: Usage;
  /** A long decode's hop this reply is (long_decode.ts). */
  hop?: Hop;
  /** The vendor's own finish reason or status to end with (`finishX`), lower case. */
  finish?: string;
}

export const DEFAULT_TOOL = "get_weather";
export const TOOL_ARGUMENTS = '{"city":"Paris"}';

export function planReply(
  vendor: string,
  model: string,
  scenario: Scenario,
  turn: Turn,
  toolNames: string[],
  search?: "declared" | "only",
): Reply {
  const reply: Reply = {
    vendor,
    model,
    usage: usageFor(scenario.think),
    textPieces: scenario.textPieces,
  };
  // The vendor's own hosted search runs when it is the request's only tool (the search
  // sub-requests of Claude Code and Gemini CLI), or when the model name says `search`.
  if (search === "only" || (search && scenario.search)) {
    const query = turn.userText.slice(0, 200);
    reply.search = { query };
    reply.text = `Results for "${query}": ${SEARCH_CITED}.`;
    return reply;
  }
  if (scenario.think) {
    reply.reasoning = `The user wrote "${
      turn.toolResult ?? turn.userText
    }". A short answer will do.`;
  }
  const searchFunction = toolNames.find((n) => /web_?search/i.test(n));
  if (scenario.webSearch && searchFunction && turn.toolResult === undefined) {
    reply.toolCall = { name: searchFunction, arguments: JSON.stringify({ query: SEARCH_QUERY }) };
  } else if (scenario.tool && turn.toolResult === undefined) {
    reply.toolCall = { name: toolNames[0] ?? DEFAULT_TOOL, arguments: TOOL_ARGUMENTS };
  } else if (turn.toolResult !== undefined) {
    reply.text = `Tool said: ${turn.toolResult}`;
  } else {
    reply.text = `Hello from ${vendor} mock: ${turn.userText}`;
  }
  if (scenario.huge && reply.text) reply.text = reply.text.padEnd(HUGE_CHARS, " lorem");
  return reply;
}

/** Splits text into `n` nearly equal non-empty pieces (fewer when it is shorter than `n`). */
export function pieces(text: string, n: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const piece = chars.slice(
      Math.floor(i * chars.length / n),
      Math.floor((i + 1) * chars.length / n),
    );
    if (piece.length) out.push(piece.join(""));
  }
  return out;
}

/** Concatenated `text` of the parts that `isText` accepts; a string is returned as is. */
export function textOf(
  content: unknown,
  isText: (part: Record<string, unknown>) => boolean,
): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((p) => p && typeof p === "object" && isText(p) && typeof p.text === "string")
    .map((p) => p.text)
    .join("");
}

/** Opaque signature-like token (base64) tied to the model, for thinking round trips. */
export function signature(kind: string, model: string): string {
  return btoa(`mock-${kind}:${model}`);
}
