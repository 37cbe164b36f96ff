/**
 * A route's prompt-cache policy (`prompt_cache`) applied to a converted request for one target:
 * one IR step before every encoder. Targets that cache only at breakpoints get them where a
 * session's prefix is stable; targets that route prompts to a cache by a key get the session's;
 * a target that takes no breakpoint gets none. The request is never changed in place (it is
 * decoded once for every target); what changes is copied.
 */
import type { PromptCaching } from "../kit/format.ts";
import type * as ir from "../kit/ir.ts";

/**
 * `auto`: breakpoints and keys placed by the gateway, the client's own kept first; `client`:
 * only the client's own breakpoints, as the conversion carries them; `off`: none at all.
 */
export type CachePolicy = "auto" | "client" | "off";

/** The policy of a route toward one of its providers: the route's own, else the provider's. */
export const policyOf = (
  route: { prompt_cache?: CachePolicy },
  provider: { prompt_cache?: CachePolicy },
): CachePolicy => route.prompt_cache ?? provider.prompt_cache ?? "auto";

/**
 * Characters per token of the gateway's estimate. Claude averages about 3.5 characters a token
 * in English prose and fewer in code and JSON; erring high places a breakpoint a little early,
 * which costs nothing (below its minimum a provider caches nothing and refuses nothing), where
 * erring low would miss a prefix that could have been cached.
 */
const CHARS_PER_TOKEN = 3;
/** An image or a document, whatever its size (a page or a picture is one to a few thousand). */
const MEDIA_TOKENS = 1000;

/**
 * The request as `policy` sends it to a target that caches as `caching` says. `sessionKey`
 * gives the key derived from the request's session (asked only when a keyed target needs one).
 */
export function cacheFor(
  req: ir.Request,
  caching: PromptCaching | undefined,
  policy: CachePolicy,
  sessionKey: () => string | undefined,
): ir.Request {
  if (policy === "off" || caching?.kind === "none") return withoutCacheHints(req);
  // The client's own key goes only where the gateway places hints: `client` is today's bytes.
  const out = req.cacheKey !== undefined && policy !== "auto"
    ? { ...req, cacheKey: undefined }
    : req;
  if (caching?.kind === "breakpoints") {
    const fitted = caching.tools ? out : withoutToolBreakpoints(out);
    return policy === "auto" ? withBreakpoints(fitted, caching) : fitted;
  }
  if (caching?.kind === "keyed" && policy === "auto" && out.cacheKey === undefined) {
    const key = sessionKey();
    if (key !== undefined) return { ...out, cacheKey: key };
  }
  return out;
}

/** A target that caches only at the breakpoints a request marks. */
type Breakpoints = Extract<PromptCaching, { kind: "breakpoints" }>;

/** A place a breakpoint may go, in the provider's prefix order (tools, system, messages). */
interface Spot {
  /** The estimated tokens of the prompt up to and including it. */
  upTo: number;
  cache?: ir.CacheBreakpoint;
  /** Whether a breakpoint may be placed here. */
  markable: boolean;
  /** Where it is: a tool, a system block, or a message's part. */
  at: { tool: number } | { system: number } | { message: number; part: number };
}

/**
 * The gateway's breakpoints, within the target's limit after the client's own: at the end of
 * the conversation (the last content block, so the next turn reads what this one wrote), after
 * the tools and system prompt (a session's stable prefix, shared by its sessions), and at the end
 * of the previous turn (read exactly even when this turn added more blocks than a provider looks
 * back over), each only where the prefix reaches the model's minimum.
 */
function withBreakpoints(req: ir.Request, caching: Breakpoints) {
  // Most requests of a short exchange are below every minimum: nothing to place, nothing built.
  if (promptTokens(req) < caching.minTokens) return req;
  const spots = spotsOf(req, caching);
  const taken = spots.filter((s) => s.cache).length + (req.cache ? 1 : 0);
  let free = caching.max - taken;
  if (free <= 0) return req;
  const last = (from: number, to: number, ok: (s: Spot) => boolean) => {
    for (let i = to - 1; i >= from; i--) if (ok(spots[i])) return i;
    return -1;
  };
  const firstTurn = spots.findIndex((s) => "message" in s.at);
  const turns = firstTurn < 0 ? spots.length : firstTurn;
  const end = last(turns, spots.length, (s) => s.markable);
  const stable = last(0, turns, (s) => s.markable);
  // The previous turn ended before the last assistant message.
  const lastReply = req.messages.findLastIndex((m) => m.role === "assistant");
  const before = last(
    turns,
    spots.length,
    (s) => s.markable && "message" in s.at && s.at.message < lastReply,
  );
  const added = new Map<number, ir.CacheBreakpoint>();
  for (const i of [end, stable, lastReply < 0 ? -1 : before]) {
    if (free === 0 || i < 0 || spots[i].cache || added.has(i)) continue;
    if (spots[i].upTo < caching.minTokens) continue;
    const cache = lifetimeAt(spots, i, req.cache);
    if (cache === undefined) continue;
    added.set(i, cache);
    free--;
  }
  return added.size ? marked(req, spots, added) : req;
}

/** Seconds of a breakpoint's lifetime (absent or unknown: the provider's default, 5 minutes). */
const seconds = (cache: ir.CacheBreakpoint) => cache.ttl === "1h" ? 3600 : 300;

/**
 * The lifetime of a breakpoint added at spot `i`: the default, unless a later breakpoint lives
 * longer (a longer lifetime may not follow a shorter one): then that one's; undefined when an
 * earlier breakpoint lives shorter than that (it cannot be added).
 */
function lifetimeAt(
  spots: Spot[],
  i: number,
  whole: ir.CacheBreakpoint | undefined,
): ir.CacheBreakpoint | undefined {
  const later = [...spots.slice(i + 1).flatMap((s) => s.cache ?? []), ...(whole ? [whole] : [])];
  const longest = later.reduce<ir.CacheBreakpoint>((a, b) => seconds(b) > seconds(a) ? b : a, {});
  const need = seconds(longest);
  if (spots.slice(0, i).some((s) => s.cache && seconds(s.cache) < need)) return undefined;
  return longest.ttl === undefined ? {} : { ttl: longest.ttl };
}

/** The parts a breakpoint may sit on: content the encoders write as a block of its own. */
function markable(p: ir.Part): boolean {
  switch (p.type) {
    case "text":
      return p.text !== "";
    case "image":
    case "document":
    case "tool_call":
    case "tool_result":
      return true;
    default:
      return false;
  }
}

/**
 * Every element of the prompt in prefix order with the estimated tokens up to it. A
 * mid-conversation system message goes to the system prompt in the encoders that take
 * breakpoints: its parts are not places to add one (the client's own still count).
 */
function spotsOf(req: ir.Request, caching: Breakpoints): Spot[] {
  const spots: Spot[] = [];
  let upTo = 0;
  const add = (
    tokens: number,
    at: Spot["at"],
    cache: ir.CacheBreakpoint | undefined,
    ok: boolean,
  ) => {
    upTo += tokens;
    spots.push({ upTo, at, markable: ok, ...(cache && { cache }) });
  };
  req.tools?.forEach((t, i) => add(toolTokens(t), { tool: i }, t.cache, caching.tools));
  req.system.forEach((p, i) => add(textTokens(p.text), { system: i }, p.cache, p.text !== ""));
  req.messages.forEach((m, message) =>
    m.parts.forEach((p, part) =>
      add(partTokens(p), { message, part }, cacheOf(p), m.role !== "system" && markable(p))
    )
  );
  return spots;
}

/** The estimated tokens of the whole prompt. */
function promptTokens(req: ir.Request): number {
  let n = 0;
  for (const t of req.tools ?? []) n += toolTokens(t);
  for (const p of req.system) n += textTokens(p.text);
  for (const m of req.messages) for (const p of m.parts) n += partTokens(p);
  return n;
}

const cacheOf = (p: ir.Part) => ("cache" in p ? p.cache : undefined);
const textTokens = (text: string) => Math.ceil(text.length / CHARS_PER_TOKEN);
const toolTokens = (t: ir.Tool) =>
  textTokens(t.name + (t.description ?? "") + JSON.stringify(t.parameters ?? {}));

function partTokens(p: ir.Part): number {
  switch (p.type) {
    case "text":
    case "thinking":
      return textTokens(p.text);
    case "tool_call":
      return textTokens(p.name + p.arguments);
    case "tool_result":
      return p.content.reduce((n, c) => n + partTokens(c), textTokens(p.callId));
    case "image":
    case "document":
      return MEDIA_TOKENS;
    case "redacted_thinking":
    case "audio":
      return textTokens(p.data);
    case "hosted_call":
      return 0;
  }
}

/** The request with `added` breakpoints on its spots (what is touched is copied). */
function marked(req: ir.Request, spots: Spot[], added: Map<number, ir.CacheBreakpoint>) {
  const out = { ...req };
  const copied = new Set<number>();
  for (const [i, cache] of added) {
    const at = spots[i].at;
    if ("tool" in at) {
      if (out.tools === req.tools) out.tools = [...req.tools!];
      out.tools![at.tool] = { ...out.tools![at.tool], cache };
    } else if ("system" in at) {
      if (out.system === req.system) out.system = [...req.system];
      out.system[at.system] = { ...out.system[at.system], cache };
    } else {
      if (out.messages === req.messages) out.messages = [...req.messages];
      const m = out.messages[at.message];
      if (!copied.has(at.message)) {
        out.messages[at.message] = { ...m, parts: [...m.parts] };
        copied.add(at.message);
      }
      const parts = out.messages[at.message].parts;
      parts[at.part] = { ...parts[at.part], cache } as ir.Part;
    }
  }
  return out;
}

/** Whether anything in the request carries a breakpoint or a key. */
function hasHints(req: ir.Request): boolean {
  const part = (p: ir.Part): boolean =>
    cacheOf(p) !== undefined || (p.type === "tool_result" && p.content.some(part));
  return req.cache !== undefined || req.cacheKey !== undefined ||
    !!req.tools?.some((t) => t.cache) || req.system.some((p) => p.cache) ||
    req.messages.some((m) => m.parts.some(part));
}

const bare = <T extends ir.Extensions>(x: T): T => {
  if (x.cache === undefined) return x;
  const { cache: _, ...rest } = x;
  return rest as T;
};

function barePart(p: ir.Part): ir.Part {
  if (p.type === "tool_result") return { ...bare(p), content: p.content.map(bare) };
  return "cache" in p ? bare(p) : p;
}

/** The request without a breakpoint or a cache key anywhere. */
function withoutCacheHints(req: ir.Request): ir.Request {
  if (!hasHints(req)) return req;
  const { cache: _, cacheKey: __, ...rest } = req;
  return {
    ...rest,
    tools: req.tools?.map(bare),
    system: req.system.map(bare),
    messages: req.messages.map((m) => ({ ...m, parts: m.parts.map(barePart) })),
  };
}

/** The request without breakpoints among its tools (a target that refuses them there). */
function withoutToolBreakpoints(req: ir.Request): ir.Request {
  return req.tools?.some((t) => t.cache) ? { ...req, tools: req.tools.map(bare) } : req;
}
