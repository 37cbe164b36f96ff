/**
 * The proof that a converted session costs what a native one costs (tests/cache_replay.ts):
 * every client format against every target family, caching as the vendors document it. The
 * cache-read share of input tokens on requests 2..12 reaches 90% of the native pair's on every
 * Claude target with `auto` (and nothing is read without it); the OpenAI and Gemini targets
 * keep theirs; a pool of three keys and a route of two equal targets read what one key reads;
 * the prompt before the breakpoints serializes identically from one request to the next; the
 * gateway's own accounting of every request agrees with what the client was told.
 */
import assert from "node:assert/strict";
import {
  type Client,
  CLIENTS,
  filler,
  type Lab,
  NATIVE,
  type Policy,
  PRICES,
  readShare,
  type Replay,
  replay,
  startLab,
  type Target,
  TARGETS,
} from "./cache_replay.ts";
import { KEY } from "./helpers.ts";
import type { RecordedRequest } from "./mock/upstream.ts";

type Obj = Record<string, unknown>;

const clientNamed = (name: string) => CLIENTS.find((c) => c.name === name)!;
const CLAUDE = new Set(["anthropic", "bedrock", "converse", "vertex", "pool", "pair"]);

/** Without its breakpoints (`cache_control`, a `cachePoint` element): what the prefix is. */
function bare(v: unknown): unknown {
  if (Array.isArray(v)) {
    return v.filter((x) => !(x && typeof x === "object" && "cachePoint" in x)).map(bare);
  }
  if (!v || typeof v !== "object") return v;
  return Object.fromEntries(
    Object.entries(v as Obj).filter(([k]) => k !== "cache_control").map(([k, x]) => [k, bare(x)]),
  );
}

/**
 * A provider call's prompt in its vendor's prefix order (each element serialized without its
 * breakpoint), and every other setting of the body.
 */
function promptOf(target: Target, call: RecordedRequest): { elements: string[]; settings: string } {
  const body = JSON.parse(call.body) as Obj;
  // A content list's elements, a Converse `cachePoint` (a breakpoint, not content) left out.
  const blocks = (content: unknown): unknown[] =>
    typeof content === "string"
      ? [content]
      : ((content as Obj[]) ?? []).filter((b) =>
        !(b && typeof b === "object" && "cachePoint" in b)
      );
  const turns = (messages: unknown, key: string) =>
    ((messages as Obj[]) ?? []).flatMap((m, i) => blocks(m[key]).map((b) => [i, m.role, b]));
  let parts: unknown[];
  let rest: Obj;
  if (target === "converse" || target === "llama") {
    const { toolConfig, system, messages, ...others } = body as Obj & { toolConfig?: Obj };
    const { tools, ...choice } = toolConfig ?? {};
    parts = [
      ...(tools as unknown[] ?? []),
      ...(system as unknown[] ?? []),
      ...turns(messages, "content"),
    ];
    rest = { ...others, choice };
  } else if (target === "openai") {
    const { tools, instructions, input, ...others } = body;
    parts = [...(tools as unknown[] ?? []), instructions, ...blocks(input)];
    rest = others;
  } else if (target === "gemini") {
    const { tools, systemInstruction, contents, ...others } = body;
    parts = [...(tools as unknown[] ?? []), systemInstruction, ...(contents as unknown[])];
    rest = others;
  } else {
    const { tools, system, messages, cache_control: _, ...others } = body;
    parts = [...(tools as unknown[] ?? []), ...blocks(system), ...turns(messages, "content")];
    rest = others;
  }
  const elements = parts.map((p) => JSON.stringify(bare(p)));
  return { elements, settings: JSON.stringify({ path: call.path, ...rest }) };
}

/** Each call's prompt begins with the whole prompt of the call before it, settings unchanged. */
function assertAppendOnly(r: Replay) {
  const label = `${r.client} → ${r.target} (${r.policy})`;
  assert.equal(r.calls.length, 12, `${label}: one provider call per request`);
  for (let i = 1; i < r.calls.length; i++) {
    const before = promptOf(r.target, r.calls[i - 1]);
    const after = promptOf(r.target, r.calls[i]);
    assert.equal(after.settings, before.settings, `${label}: call ${i + 1}'s settings`);
    const diverged = before.elements.findIndex((e, k) => after.elements[k] !== e);
    assert.equal(
      diverged,
      -1,
      `${label}: call ${i + 1} differs from call ${i} at element ${diverged}:\n` +
        `${before.elements[diverged]?.slice(0, 300)}\n${after.elements[diverged]?.slice(0, 300)}`,
    );
  }
}

/** What the gateway logged of a session's requests agrees with what its client was told. */
function assertAccounted(lab: Lab, r: Replay, from: number) {
  const lines = lab.logs.slice(from).filter((l) =>
    l.status === 200 && l.cache_read_tokens !== undefined
  );
  // Gemini's and Interactions' dialects have no field for cache writes.
  const told = r.usage.map((u) => [u.inputTokens, u.cacheReadTokens ?? 0, u.cacheWriteTokens]);
  const logged = lines.map((l, i) => [
    l.input_tokens,
    l.cache_read_tokens,
    r.usage[i]?.cacheWriteTokens === undefined ? undefined : l.cache_write_tokens,
  ]);
  assert.deepEqual(logged, told, `${r.client} → ${r.target}: the access log's counts`);
}

async function run(lab: Lab, client: Client, target: Target, policy: Policy) {
  const from = lab.logs.length;
  const r = await replay(lab, client, target, policy);
  assertAccounted(lab, r, from);
  return r;
}

Deno.test("prompt cache replay: every client format × target family reads what the native pair reads", async (t) => {
  const lab = await startLab();
  try {
    const native = new Map<string, number>();
    for (const target of TARGETS) {
      const r = await run(lab, clientNamed(NATIVE[target]), target, "client");
      native.set(target, readShare(r));
    }
    const shares: string[] = [];
    for (const target of TARGETS) {
      for (const client of CLIENTS) {
        await t.step(`${client.name} → ${target}`, async () => {
          const auto = await run(lab, client, target, "auto");
          assertAppendOnly(auto);
          const share = readShare(auto);
          // Claude's native pair: Claude Code's own breakpoints on Anthropic's API.
          const reference = native.get(CLAUDE.has(target) ? "anthropic" : target)!;
          shares.push(
            `${client.name} → ${target}: ${share.toFixed(3)} (native ${reference.toFixed(3)})`,
          );
          assert.ok(reference > 0.9, `${target}: the native pair reads ${reference}`);
          assert.ok(
            share >= 0.9 * reference,
            `${client.name} → ${target}: ${share} < 90% of ${reference}`,
          );
          if (CLAUDE.has(target) && client.name !== NATIVE[target]) {
            // Without the gateway's breakpoints a converted session reads nothing: the gap.
            const plain = await run(lab, client, target, "client");
            assert.equal(readShare(plain), 0, `${client.name} → ${target} (client)`);
          }
          if (target === "openai") {
            // One key for the whole session: the client's own (Codex's thread), else the gateway's.
            const keys = new Set(auto.calls.map((c) => JSON.parse(c.body).prompt_cache_key));
            assert.equal(keys.size, 1, `${client.name}: keys ${[...keys]}`);
            const [key] = keys;
            if (client.format.id === "responses") assert.match(key, /^thread-/);
            else assert.match(key, /^gw-[0-9a-f]{32}$/, `${client.name}: ${key}`);
          }
        });
      }
    }
    console.log(shares.join("\n"));
  } finally {
    await lab.close();
  }
});

Deno.test("prompt cache replay: a pool of three keys and two equal targets read what one key reads", async (t) => {
  const lab = await startLab();
  try {
    for (const client of CLIENTS) {
      await t.step(client.name, async () => {
        const one = readShare(await run(lab, client, "anthropic", "auto"));
        for (const target of ["pool", "pair"] as const) {
          const r = await run(lab, client, target, "auto");
          assertAppendOnly(r);
          // As one key's, but for the session's own text (each session's is its own).
          assert.ok(
            Math.abs(readShare(r) - one) < 0.001,
            `${client.name} → ${target}: ${readShare(r)} vs ${one}`,
          );
          // One account for the whole session.
          const keys = new Set(r.calls.map((c) => c.headers["x-api-key"]));
          assert.equal(keys.size, 1, `${client.name} → ${target}: keys ${[...keys]}`);
        }
      });
    }
    // Different sessions spread over the pool: each keeps its own key.
    const used = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const r = await replay(lab, { ...clientNamed("chat"), name: `chat${i}` }, "pool", "auto", 2);
      used.add(r.calls[0].headers["x-api-key"]);
      assert.equal(r.calls[1].headers["x-api-key"], r.calls[0].headers["x-api-key"]);
    }
    assert.equal(used.size, 3, "twelve sessions use all three keys");
  } finally {
    await lab.close();
  }
});

Deno.test("prompt cache replay: off sends no breakpoint, the client's included; a Converse model without caching gets none", async () => {
  const lab = await startLab();
  try {
    const messages = clientNamed("messages");
    const off = await run(lab, messages, "anthropic", "off");
    assert.ok(off.calls.every((c) => !c.body.includes("cache_control")), "no cache_control sent");
    assert.equal(readShare(off), 0);
    // Claude Code's own markers and the gateway's would reach Llama as cachePoint: Bedrock's 400.
    for (const client of [messages, clientNamed("chat")]) {
      const r = await run(lab, client, "llama", "auto");
      assert.ok(
        r.calls.every((c) => !c.body.includes("cachePoint")),
        `${client.name}: no cachePoint`,
      );
    }
  } finally {
    await lab.close();
  }
});

Deno.test("prompt cache replay: a turn of more blocks than Anthropic looks back over still reads the previous request", async () => {
  const lab = await startLab();
  try {
    const system = { role: "system", content: filler("parallel", 3000) };
    const tools = [{
      type: "function",
      function: { name: "read_file", parameters: { type: "object" } },
    }];
    const ask = async (messages: unknown[]) => {
      const res = await fetch(`${lab.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "anthropic-auto", messages, tools }),
      });
      const json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(json));
      return json.usage;
    };
    const first = [system, { role: "user", content: "Read the twelve files." }];
    const before = await ask(first);
    // Twelve parallel calls and their results: 24 blocks, past the 20-block look-back.
    const calls = Array.from({ length: 12 }, (_, i) => ({
      id: `call_${i}`,
      type: "function",
      function: { name: "read_file", arguments: `{"path":"f${i}"}` },
    }));
    const results = calls.map((c, i) => ({
      role: "tool",
      tool_call_id: c.id,
      content: `file ${i}`,
    }));
    const after = await ask([
      ...first,
      { role: "assistant", content: null, tool_calls: calls },
      ...results,
    ]);
    // The previous request's end carries a breakpoint of its own: read exactly.
    assert.equal(after.prompt_tokens_details.cached_tokens, before.prompt_tokens);
  } finally {
    await lab.close();
  }
});

/** The usage an answer reports, in the dialect's own fields, from its JSON or its stream. */
function reported(id: string, text: string, stream: boolean): Obj {
  const events = stream
    ? text.split("\n").filter((l) => l.startsWith("data: {")).map((l) =>
      JSON.parse(l.slice(6)) as Obj
    )
    : [JSON.parse(text) as Obj];
  const last = <T>(pick: (e: Obj) => T | undefined) => events.map(pick).findLast((u) => u) as Obj;
  switch (id) {
    case "chat":
      return last((e) => e.usage as Obj);
    case "responses":
      return last((e) => (stream ? (e.response as Obj | undefined)?.usage : e.usage) as Obj);
    case "messages":
      return last((e) => (e.type === "message_delta" || !stream ? e.usage : undefined) as Obj);
    case "generate-content":
      return last((e) => e.usageMetadata as Obj);
    default:
      return last((e) => (stream ? (e.interaction as Obj | undefined)?.usage : e.usage) as Obj);
  }
}

Deno.test("prompt cache replay: every client dialect reports cache reads (and writes where it has the field), JSON and stream", async (t) => {
  const lab = await startLab();
  try {
    for (const client of CLIENTS.filter((c) => !c.ws)) {
      for (const stream of [false, true]) {
        const { format } = client;
        // Messages clients convert to Converse; the others to Anthropic.
        const model = format.id === "messages" ? "converse-auto" : "anthropic-auto";
        await t.step(`${client.name} (${stream ? "stream" : "JSON"})`, async () => {
          const context = { system: filler(`usage${client.name}${stream}`, 2000) };
          const body = format.loop!.ask(model, stream, "hello", context);
          const send = async () => {
            const res = await fetch(lab.url + format.client.path(model, stream), {
              method: "POST",
              headers: { ...format.client.headers(KEY), "content-type": "application/json" },
              body: JSON.stringify(body),
            });
            const text = await res.text();
            assert.equal(res.status, 200, text.slice(0, 300));
            return reported(format.id, text, stream);
          };
          const first = await send();
          const u = await send();
          const label = `${client.name}: ${JSON.stringify(u)}`;
          switch (format.id) {
            case "chat": {
              const written = first.prompt_tokens_details as Obj;
              assert.ok((written.cache_write_tokens as number) > 1000, label);
              const details = u.prompt_tokens_details as Obj;
              assert.ok((details.cached_tokens as number) > 1000, label);
              assert.ok((u.prompt_tokens as number) >= (details.cached_tokens as number), label);
              break;
            }
            case "responses": {
              assert.ok(((first.input_tokens_details as Obj).cache_write_tokens as number) > 1000);
              const details = u.input_tokens_details as Obj;
              assert.ok((details.cached_tokens as number) > 1000, label);
              assert.equal(details.cache_write_tokens, 0, label);
              assert.ok((u.input_tokens as number) >= (details.cached_tokens as number), label);
              break;
            }
            case "messages":
              assert.ok((first.cache_creation_input_tokens as number) > 1000);
              assert.ok((u.cache_read_input_tokens as number) > 1000, label);
              assert.equal(u.cache_creation_input_tokens, 0, label);
              // The uncached rest: the question and the turn's framing.
              assert.ok((u.input_tokens as number) < 100, label);
              break;
            case "generate-content":
              assert.ok((u.cachedContentTokenCount as number) > 1000, label);
              assert.ok((u.promptTokenCount as number) >= (u.cachedContentTokenCount as number));
              break;
            default:
              assert.ok((u.total_cached_tokens as number) > 1000, label);
              assert.ok((u.total_input_tokens as number) >= (u.total_cached_tokens as number));
          }
        });
      }
    }
  } finally {
    await lab.close();
  }
});

Deno.test("prompt cache replay: spend prices cache reads and writes at their own rates, on every platform", async () => {
  const lab = await startLab();
  try {
    const expected = new Map<string, number>();
    for (const target of TARGETS) {
      const from = lab.logs.length;
      await run(lab, clientNamed("chat"), target, "auto");
      for (const l of lab.logs.slice(from)) {
        // Claude behind every platform; GPT-5 and Gemini at the second price.
        const price = PRICES[l.provider === "openai" || l.provider === "gemini" ? 1 : 0];
        const read = Number(l.cache_read_tokens);
        const write = Number(l.cache_write_tokens);
        const fresh = Number(l.input_tokens) - read - write;
        const usd = (fresh * price.input + read * price.cache_read +
          write * (price.cache_write ?? price.input) + Number(l.output_tokens) * price.output) /
          1e6;
        const provider = String(l.provider);
        expected.set(provider, (expected.get(provider) ?? 0) + usd);
      }
    }
    const metrics = lab.metrics();
    for (const [provider, usd] of expected) {
      const sum = [...metrics.matchAll(
        new RegExp(`^gateway_spend_usd_total\\{[^}]*provider="${provider}"[^}]*\\} (\\S+)$`, "gm"),
      )].reduce((n, m) => n + Number(m[1]), 0);
      assert.ok(Math.abs(sum - usd) < 1e-9, `${provider}: spend ${sum}, expected ${usd}`);
    }
    assert.equal(expected.size, TARGETS.length);
  } finally {
    await lab.close();
  }
});
