/**
 * The prompt-cache policy step (src/request/prompt_cache.ts) on IR requests: where `auto` places
 * breakpoints and within which limits, lifetimes, minimum lengths, what `client` and `off`
 * send, keys for keyed targets; and over the golden request cases, that `client` is the codecs'
 * own output and `auto` only adds breakpoints.
 */
import assert from "node:assert/strict";
import type { PromptCaching } from "../src/kit/format.ts";
import type * as ir from "../src/kit/ir.ts";
import { cacheFor, policyOf } from "../src/request/prompt_cache.ts";
import { converseCaching } from "../plugins/converse/caching.ts";
import { claudeCaching, claudeMinTokens } from "../plugins/messages/caching.ts";
import { goldenCases } from "./golden_runner.ts";
import { speaksUpstream, TEST_FORMATS, UPSTREAM_FORMATS } from "./formats.ts";

const CLAUDE = claudeCaching("claude-sonnet-4-5");
const NOVA = converseCaching("amazon.nova-pro-v1:0")!;
const long = (seed: string, tokens: number) => `${seed} `.repeat(tokens * 3 / (seed.length + 1));
const text = (t: string, cache?: ir.CacheBreakpoint): ir.TextPart => ({
  type: "text",
  text: t,
  ...(cache && { cache }),
});

/**
 * A tool loop: a long system prompt and tool, then `turns` exchanges (user question, tool call,
 * tool result), the last ending on the tool result.
 */
function session(turns: number, extra: Partial<ir.Request> = {}): ir.Request {
  const messages: ir.Message[] = [];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: "user", parts: [text(`question ${i}`)] });
    messages.push({
      role: "assistant",
      parts: [{ type: "thinking", text: "hm" }, {
        type: "tool_call",
        id: `call_${i}`,
        name: "read",
        arguments: "{}",
      }],
    });
    messages.push({
      role: "tool",
      parts: [{ type: "tool_result", callId: `call_${i}`, content: [text(`result ${i}`)] }],
    });
  }
  return {
    model: "m",
    stream: false,
    system: [text(long("system", 1500))],
    tools: [{ name: "read", description: long("tool", 800), parameters: { type: "object" } }],
    messages,
    ...extra,
  };
}

const noKey = () => undefined;

/** Where the request carries breakpoints: `tool:0`, `system:0`, `m5.0`, `top`. */
function marks(req: ir.Request): string[] {
  const out: string[] = [];
  req.tools?.forEach((t, i) => t.cache && out.push(`tool:${i}${ttl(t.cache)}`));
  req.system.forEach((p, i) => p.cache && out.push(`system:${i}${ttl(p.cache)}`));
  req.messages.forEach((m, i) =>
    m.parts.forEach((p, k) => {
      if ("cache" in p && p.cache) out.push(`m${i}.${k}${ttl(p.cache)}`);
      if (p.type === "tool_result") {
        p.content.forEach((c, j) => c.cache && out.push(`m${i}.${k}.${j}${ttl(c.cache)}`));
      }
    })
  );
  if (req.cache) out.push(`top${ttl(req.cache)}`);
  return out;
}
const ttl = (c: ir.CacheBreakpoint) => (c.ttl ? `@${c.ttl}` : "");

Deno.test("prompt cache: auto places breakpoints at the end, after the system, at the previous turn's end", () => {
  const req = session(3);
  const before = structuredClone(req);
  const out = cacheFor(req, CLAUDE, "auto", noKey);
  // The end (the last tool result), the system prompt, the previous request's end (its question).
  assert.deepEqual(marks(out), ["system:0", "m6.0", "m8.0"]);
  assert.deepEqual(req, before, "the decoded request is not changed in place");
  // One exchange: the previous request was the question alone.
  assert.deepEqual(marks(cacheFor(session(1), CLAUDE, "auto", noKey)), [
    "system:0",
    "m0.0",
    "m2.0",
  ]);
  // No answer yet: the end and the system only.
  const first = { ...session(1), messages: session(1).messages.slice(0, 1) };
  assert.deepEqual(marks(cacheFor(first, CLAUDE, "auto", noKey)), ["system:0", "m0.0"]);
});

Deno.test("prompt cache: the client's breakpoints come first; the gateway adds only within four", () => {
  const three = session(3, {
    system: [text(long("system", 1500), {})],
    tools: [{ name: "read", description: long("tool", 800), cache: {} }],
    cache: {},
  });
  // Three taken (a tool, the system, the top-level marker): one left, for the conversation's end.
  assert.deepEqual(marks(cacheFor(three, CLAUDE, "auto", noKey)), [
    "tool:0",
    "system:0",
    "m8.0",
    "top",
  ]);
  const four = {
    ...three,
    messages: three.messages.map((m, i) => i === 0 ? { ...m, parts: [text("q", {})] } : m),
  };
  const sent = cacheFor(four, CLAUDE, "auto", noKey);
  assert.equal(sent, four, "a request already carrying four is forwarded as the client sent it");
});

Deno.test("prompt cache: nothing is added below the model's minimum", () => {
  const short: ir.Request = {
    model: "m",
    stream: false,
    system: [text("Be brief.")],
    messages: [{ role: "user", parts: [text("hi")] }],
  };
  assert.equal(cacheFor(short, CLAUDE, "auto", noKey), short);
  // ~1500 + ~800 estimated tokens: enough for Sonnet 4.5 (1024), not for Opus 4.5 (4096).
  assert.equal(claudeMinTokens("anthropic.claude-opus-4-5-20251101-v1:0"), 4096);
  assert.equal(claudeMinTokens("claude-3-5-haiku@20241022"), 2048);
  assert.equal(claudeMinTokens("claude-sonnet-4-5"), 1024);
  const req = session(2);
  assert.deepEqual(marks(cacheFor(req, claudeCaching("claude-opus-4-5"), "auto", noKey)), []);
  const big = session(2, { system: [text(long("system", 4500))] });
  assert.deepEqual(marks(cacheFor(big, claudeCaching("claude-opus-4-5"), "auto", noKey)), [
    "system:0",
    "m3.0",
    "m5.0",
  ]);
});

Deno.test("prompt cache: an added breakpoint never precedes a longer-lived one of the client's", () => {
  // Claude Code's way: its system and last message marked for an hour.
  const hour = { ttl: "1h" };
  const req = session(3, { system: [text(long("system", 1500), hour)] });
  const last = req.messages.length - 1;
  req.messages[last] = {
    role: "tool",
    parts: [{ type: "tool_result", callId: "call_2", content: [text("r")], cache: hour }],
  };
  // The previous request's end precedes the client's 1h end marker: it lives an hour too.
  assert.deepEqual(marks(cacheFor(req, CLAUDE, "auto", noKey)), [
    "system:0@1h",
    "m6.0@1h",
    "m8.0@1h",
  ]);
  // A 5m marker before a 1h one: nothing may go between them (nor is the client's order fixed).
  const mixed = session(3, {
    tools: [{ name: "read", description: long("tool", 800), cache: {} }],
  });
  mixed.messages[last] = req.messages[last];
  assert.deepEqual(marks(cacheFor(mixed, CLAUDE, "auto", noKey)), ["tool:0", "m8.0@1h"]);
});

Deno.test("prompt cache: Nova takes no breakpoint among tools; a model without caching none at all", () => {
  const req = session(2, {
    tools: [{ name: "read", description: long("tool", 800), cache: {} }],
  });
  // The client's tool breakpoint would be refused: it goes; the system is Nova's stable prefix.
  assert.deepEqual(marks(cacheFor(req, NOVA, "auto", noKey)), ["system:0", "m3.0", "m5.0"]);
  assert.deepEqual(marks(cacheFor(req, NOVA, "client", noKey)), []);
  const noSystem = { ...req, system: [text(long("system", 1500))], tools: [] };
  assert.deepEqual(marks(cacheFor(noSystem, NOVA, "auto", noKey)), ["system:0", "m3.0", "m5.0"]);
  // Without a system prompt Nova has no stable breakpoint: its tools cannot take one.
  const toolsOnly = { ...req, system: [], tools: [{ name: "read", description: long("t", 1200) }] };
  assert.deepEqual(marks(cacheFor(toolsOnly, NOVA, "auto", noKey)), ["m3.0", "m5.0"]);
  const llama = converseCaching("meta.llama3-3-70b-instruct-v1:0");
  assert.deepEqual(llama, { kind: "none" });
  const marked = cacheFor(req, CLAUDE, "auto", noKey);
  for (const policy of ["auto", "client", "off"] as const) {
    assert.deepEqual(marks(cacheFor(marked, llama, policy, noKey)), [], policy);
  }
  // An application inference profile does not say its model: the client's own go, none is added.
  const profile = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc";
  assert.equal(converseCaching(profile), undefined);
  assert.deepEqual(marks(cacheFor(req, converseCaching(profile), "auto", noKey)), ["tool:0"]);
});

Deno.test("prompt cache: client carries only the client's breakpoints, off none, nested ones included", () => {
  const req = session(2, { cache: { ttl: "1h" }, cacheKey: "k" });
  req.messages[2] = {
    role: "tool",
    parts: [{ type: "tool_result", callId: "c", content: [text("x", {})], cache: {} }],
  };
  const client = cacheFor(req, CLAUDE, "client", noKey);
  assert.deepEqual(marks(client), ["m2.0", "m2.0.0", "top@1h"]);
  assert.equal(client.cacheKey, undefined, "client: today's bytes, no key");
  const off = cacheFor(req, CLAUDE, "off", noKey);
  assert.deepEqual(marks(off), []);
  assert.equal(off.cacheKey, undefined);
  assert.deepEqual(marks(req), ["m2.0", "m2.0.0", "top@1h"], "unchanged in place");
});

Deno.test("prompt cache: keyed targets get the client's key, else the session's", () => {
  const keyed: PromptCaching = { kind: "keyed" };
  const req = session(1);
  assert.equal(cacheFor(req, keyed, "auto", () => "gw-session").cacheKey, "gw-session");
  const own = { ...req, cacheKey: "thread-1" };
  assert.equal(cacheFor(own, keyed, "auto", () => "gw-session").cacheKey, "thread-1");
  assert.equal(cacheFor(own, keyed, "client", () => "gw-session").cacheKey, undefined);
  assert.equal(cacheFor(req, keyed, "off", () => "gw-session").cacheKey, undefined);
  // Breakpoints are carried as today (the OpenAI encoders write none).
  const marked = session(1, { system: [text("s", {})] });
  assert.deepEqual(marks(cacheFor(marked, keyed, "auto", noKey)), ["system:0"]);
});

Deno.test("prompt cache: a route's policy is its own, else its provider's, else auto", () => {
  assert.equal(policyOf({}, {}), "auto");
  assert.equal(policyOf({}, { prompt_cache: "off" }), "off");
  assert.equal(policyOf({ prompt_cache: "client" }, { prompt_cache: "off" }), "client");
});

// ---- over the golden request cases ----

type Obj = Record<string, unknown>;

/** A body without any breakpoint, and how many it had (Anthropic's and Converse's). */
function stripped(body: unknown): { body: unknown; count: number } {
  let count = 0;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      return v.filter((x) => !(x && typeof x === "object" && "cachePoint" in x && ++count))
        .map(walk);
    }
    if (!v || typeof v !== "object") return v;
    const out: Obj = {};
    for (const [k, x] of Object.entries(v as Obj)) {
      if (k === "cache_control") count++;
      else out[k] = walk(x);
    }
    return out;
  };
  return { body: walk(body), count };
}

const TARGETS = [...TEST_FORMATS, ...UPSTREAM_FORMATS].filter(speaksUpstream);
/** The rules each target is tested with (a Claude model where breakpoints are taken). */
const rulesOf = (api: string) =>
  TARGETS.find((f) => f.id === api)!.plugin.upstream!.promptCache?.(
    "anthropic.claude-sonnet-4-5-20250929-v1:0",
  );

Deno.test("prompt cache: over the golden cases, client is the codecs' output and auto only adds breakpoints", async (t) => {
  const root = new URL("./golden/", import.meta.url);
  for (const c of goldenCases(root, "requests", TEST_FORMATS, () => ".json")) {
    const input = JSON.parse(Deno.readTextFileSync(c.file));
    let req: ir.Request;
    try {
      req = c.format.plugin.codec.decodeRequest(input.body, input.model);
    } catch {
      continue; // a case the decoder refuses
    }
    for (const target of TARGETS) {
      await t.step(`${c.format.id}/${c.name} → ${target.id}`, () => {
        const codec = target.plugin.codec;
        const encode = (r: ir.Request) => {
          const ctx = { model: "upstream-model", route: "r", defaultMaxTokens: 4096, dropped: [] };
          try {
            return codec.encodeRequest(r, ctx);
          } catch (e) {
            return { error: (e as Error).message };
          }
        };
        const rules = rulesOf(target.id);
        const today = encode({ ...req, cacheKey: undefined });
        assert.deepEqual(encode(cacheFor(req, rules, "client", noKey)), today);
        const auto = encode(cacheFor(req, rules, "auto", () => "gw-k"));
        const a = stripped(JSON.parse(JSON.stringify(auto)));
        const b = stripped(JSON.parse(JSON.stringify(today)));
        const { prompt_cache_key: _, ...unkeyed } = a.body as Obj;
        assert.deepEqual(unkeyed, b.body, "auto only adds breakpoints (and a key)");
        assert.ok(a.count >= b.count && (a.count <= 4 || a.count === b.count));
        assert.equal(stripped(encode(cacheFor(req, rules, "off", noKey))).count, 0);
      });
    }
  }
});
