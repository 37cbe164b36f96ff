/**
 * Provider prompt caches as the vendors document them, for the mock upstreams (an opt-in of
 * `startMockUpstream({ caching })`; without it every answer reports the fixed TOKENS).
 *
 * - **Explicit** (Anthropic Messages on its own API, Bedrock InvokeModel and Vertex rawPredict;
 *   Bedrock Converse's `cachePoint`): the prompt is a sequence of blocks in the prefix order
 *   tools → system → messages. An entry is written at each breakpoint whose prefix reaches the
 *   model's minimum; a lookup from a breakpoint checks that position and up to LOOKBACK block
 *   boundaries before it, and the longest live hit is read. An entry lives 5 minutes (or an
 *   hour with `ttl: "1h"`), refreshed by each hit.
 * - **Automatic** (OpenAI chat and Responses; Gemini's implicit caching): the longest live
 *   prefix of the prompt text that an earlier prompt of the same partition shared, counted in
 *   whole steps (OpenAI: 128 tokens) once it reaches the minimum. OpenAI routes a request to a
 *   cache by its prefix combined with `prompt_cache_key`: here a key is a partition of its own.
 *
 * Caches are per provider account (the API key; the platforms say what identifies one) and per
 * model.
 *
 * Token estimate (deterministic, the same for every vendor): an element costs
 * ceil(characters of its JSON / 4) tokens, its JSON taken as the request sent it (key order
 * included) and without its own breakpoint; a request's input is the sum over its elements.
 */
import { sha256 } from "../../src/request/sha256.ts";

export type Ttl = "5m" | "1h";
const TTL_MS: Record<Ttl, number> = { "5m": 5 * 60_000, "1h": 60 * 60_000 };

/** How far back from a breakpoint a lookup searches (Anthropic: "up to 20 blocks"). */
export const LOOKBACK = 20;

/** An element's estimated tokens: a quarter of its characters, rounded up. */
export const tokensOf = (text: string): number => Math.ceil(text.length / 4);

/** One element of an explicit prompt (a tool, a system block, a content block). */
export interface Block {
  /** Its serialization: equal text, equal element. */
  text: string;
  /**
   * Settings the provider keys the cache on from here on (tool choice before the system,
   * thinking before the messages): hashed into the prefix, not counted as tokens.
   */
  salt?: string;
  /** A breakpoint on it, with its lifetime. */
  marker?: Ttl;
  /** Where it is in the body, as the vendor's errors name it (`messages.2.content.0`). */
  at: string;
}

/** What an explicit prompt is made of, as the vendor's module read its body. */
export interface ExplicitPrompt {
  kind: "explicit";
  blocks: Block[];
  /** The model's minimum cacheable prefix. */
  minTokens: number;
}

/** A prompt whose prefix is cached without markers. */
export interface AutomaticPrompt {
  kind: "automatic";
  /** The prompt's elements, serialized in the provider's order. */
  text: string;
  minTokens: number;
  /** Hits count in whole steps (OpenAI: 128 tokens; Gemini: 1). */
  step: number;
  /** The cache a request is routed to within its account (OpenAI's `prompt_cache_key`). */
  partition?: string;
}

export type Prompt = ExplicitPrompt | AutomaticPrompt;

/** What a request's input was, as the vendors' usage reports it. */
export interface CacheUse {
  /** All input tokens, cache reads and writes included. */
  input: number;
  read: number;
  /** Written at 5-minute breakpoints. */
  write: number;
  /** Written at one-hour breakpoints. */
  write1h: number;
}

/** A breakpoint's lifetime from a wire `ttl` (absent: the default). */
export const ttlOf = (ttl: unknown): Ttl => ttl === "1h" ? "1h" : "5m";

/**
 * The minimum cacheable length of a Claude model, by its name as any platform spells it
 * (`claude-opus-4-5`, `anthropic.claude-3-5-haiku-…`, `claude-sonnet-4-6@…`): 4096 for Opus
 * 4.5/4.6 and Haiku 4.5, 2048 for Sonnet 4.6 and the Haiku 3 models, else 1024.
 */
export function claudeMinTokens(model: string): number {
  if (/opus-4-[56]|haiku-4-5/.test(model)) return 4096;
  if (/sonnet-4-6|haiku/.test(model)) return 2048;
  return 1024;
}

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const digest = (previous: string, text: string) => hex(sha256(`${previous}\u0000${text}`));

interface Entry {
  expires: number;
  ttl: number;
}

/** One account's automatic entry: the prompt text it holds. */
interface TextEntry {
  text: string;
  expires: number;
}

/** Automatic entries live five minutes after their last use. */
const AUTOMATIC_MS = 5 * 60_000;

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** The prompt caches of every account of one mock provider. */
export class PromptCaches {
  readonly #explicit = new Map<string, Map<string, Entry>>();
  readonly #automatic = new Map<string, TextEntry[]>();

  /** `now`: the clock entries live by (tests move it to expire them). */
  constructor(readonly now: () => number = Date.now) {}

  /** Reads and writes `account`'s cache for a prompt; what its input was. */
  use(account: string, prompt: Prompt): CacheUse {
    return prompt.kind === "explicit"
      ? this.#useExplicit(account, prompt)
      : this.#useAutomatic(account, prompt);
  }

  #useExplicit(account: string, { blocks, minTokens }: ExplicitPrompt): CacheUse {
    const store = this.#explicit.get(account) ?? new Map<string, Entry>();
    this.#explicit.set(account, store);
    const now = this.now();
    const hashes: string[] = [];
    const upTo: number[] = [];
    let hash = "";
    let total = 0;
    for (const b of blocks) {
      hash = digest(hash, (b.salt ?? "") + b.text);
      total += tokensOf(b.text);
      hashes.push(hash);
      upTo.push(total);
    }
    const live = (i: number) => (store.get(hashes[i])?.expires ?? 0) > now;
    const markers = blocks.flatMap((b, i) => (b.marker ? [i] : []));
    // The longest hit at a breakpoint or within LOOKBACK boundaries before one.
    let read = -1;
    for (const m of markers) {
      for (let i = m; i >= Math.max(0, m - LOOKBACK); i--) {
        if (live(i)) {
          read = Math.max(read, i);
          break;
        }
      }
    }
    if (read >= 0) {
      const entry = store.get(hashes[read])!;
      entry.expires = now + entry.ttl;
    }
    // Each breakpoint past the hit whose prefix is long enough writes an entry; the tokens from
    // the previous written point are billed at its lifetime.
    let write = 0;
    let write1h = 0;
    let from = read >= 0 ? upTo[read] : 0;
    for (const m of markers) {
      if (m <= read || upTo[m] < minTokens) continue;
      const ttl = TTL_MS[blocks[m].marker!];
      const written = upTo[m] - from;
      if (blocks[m].marker === "1h") write1h += written;
      else write += written;
      from = upTo[m];
      store.set(hashes[m], { expires: now + ttl, ttl });
    }
    return { input: total, read: read >= 0 ? upTo[read] : 0, write, write1h };
  }

  #useAutomatic(account: string, prompt: AutomaticPrompt): CacheUse {
    const key = `${account}\u0000${prompt.partition ?? ""}`;
    const now = this.now();
    const entries = (this.#automatic.get(key) ?? []).filter((e) => e.expires > now);
    let best: TextEntry | undefined;
    let matched = 0;
    for (const e of entries) {
      const n = commonPrefix(e.text, prompt.text);
      if (n > matched) [best, matched] = [e, n];
    }
    const total = tokensOf(prompt.text);
    const prefix = Math.floor(matched / 4);
    const read = prefix >= prompt.minTokens ? Math.floor(prefix / prompt.step) * prompt.step : 0;
    if (read > 0) best!.expires = now + AUTOMATIC_MS;
    if (total >= prompt.minTokens) {
      // An entry that this prompt extends is replaced by it.
      const kept = entries.filter((e) => !prompt.text.startsWith(e.text));
      kept.push({ text: prompt.text, expires: now + AUTOMATIC_MS });
      this.#automatic.set(key, kept);
    }
    return { input: total, read, write: 0, write1h: 0 };
  }
}

/** The serialized elements of an automatic prompt, one a line. */
const serialized = (elements: unknown[]) => elements.map((e) => JSON.stringify(e)).join("\n");

/**
 * OpenAI's automatic caching of `elements` (chat: tools, messages; Responses: tools,
 * instructions, input): from 1024 tokens, in steps of 128, routed by `prompt_cache_key`.
 */
export const openaiPrompt = (
  elements: unknown[],
  body: { prompt_cache_key?: unknown },
): AutomaticPrompt => ({
  kind: "automatic",
  text: serialized(elements),
  minTokens: 1024,
  step: 128,
  partition: typeof body.prompt_cache_key === "string" ? body.prompt_cache_key : undefined,
});

/**
 * Gemini's implicit caching of `elements` (tools, the system instruction, contents): exact
 * prefixes from the model's minimum (2048 tokens for 2.5 models, 4096 for 3.x).
 */
export const geminiPrompt = (elements: unknown[], model: string): AutomaticPrompt => ({
  kind: "automatic",
  text: serialized(elements),
  minTokens: /gemini-[3-9]/.test(model) ? 4096 : 2048,
  step: 1,
});

/**
 * What is wrong with a prompt's breakpoints by Anthropic's rules (at most four, and no one-hour
 * breakpoint after a five-minute one in the prefix order), in Anthropic's words.
 */
export function anthropicMarkerProblem(blocks: Block[], topLevel: boolean): string | undefined {
  const marked = blocks.filter((b) => b.marker);
  // A top-level `cache_control` takes one of the four slots too.
  const found = marked.length + (topLevel ? 1 : 0);
  if (found > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${found}.`;
  const shortFirst = marked.findIndex((b) => b.marker === "5m");
  const late = marked.find((b, i) => shortFirst >= 0 && i > shortFirst && b.marker === "1h");
  if (late) {
    return `${late.at}.cache_control.ttl: a ttl='1h' cache_control block must not come after ` +
      "a ttl='5m' cache_control block. Note that blocks are processed in the following order: " +
      "`tools`, `system`, `messages`.";
  }
}
