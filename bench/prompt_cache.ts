/**
 * `deno task bench:prompt-cache`: BENCHMARKS.md's prompt-caching tables, computed from the
 * session replay (tests/cache_replay.ts) against providers caching as their vendors document it.
 * Not a timing benchmark: its figures are token counts and what they cost, the same on any machine.
 *
 * - the cache-read share of input tokens over requests 2..12 per client format × target family,
 *   with `prompt_cache: auto` and with `client` (the bytes sent before the option), the native
 *   pairs marked;
 * - the session's cost at list prices (USD per million tokens, below), native and converted, with
 *   and without `auto`; a pool of three keys next to one key.
 *
 * Token counts are the mock's estimate (a quarter of each element's JSON characters), so costs are
 * those of the replayed session, not of any real prompt; their ratios are what to read.
 */
import type * as ir from "../src/kit/ir.ts";
import {
  CLIENTS,
  NATIVE,
  type Policy,
  readShare,
  type Replay,
  replay,
  startLab,
  type Target,
  TARGETS,
} from "../tests/cache_replay.ts";

/** List prices, USD per million tokens: Claude Sonnet 4.5 (Anthropic, Bedrock, Vertex), GPT-5, Gemini 2.5 Pro. */
const PRICES: Record<
  string,
  { input: number; write5m: number; write1h: number; read: number; output: number }
> = {
  claude: { input: 3, write5m: 3.75, write1h: 6, read: 0.3, output: 15 },
  openai: { input: 1.25, write5m: 0, write1h: 0, read: 0.125, output: 10 },
  gemini: { input: 1.25, write5m: 0, write1h: 0, read: 0.125, output: 10 },
};
const priceOf = (t: Target) => PRICES[t === "openai" || t === "gemini" ? t : "claude"];

/**
 * A session's cost. Claude Code's breakpoints (the Messages client) live an hour, and so do the
 * gateway's before them: its writes are priced at the one-hour rate, every other session's at
 * five minutes'.
 */
function cost(r: Replay): number {
  const p = priceOf(r.target);
  const write = r.client === "messages" ? p.write1h : p.write5m;
  const usd = (u: ir.Usage) => {
    const read = u.cacheReadTokens ?? 0;
    const written = u.cacheWriteTokens ?? 0;
    const fresh = u.inputTokens - read - written;
    return fresh * p.input + read * p.read + written * write + u.outputTokens * p.output;
  };
  return r.usage.reduce((n, u) => n + usd(u), 0) / 1e6;
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const usd = (x: number) => `$${x.toFixed(4)}`;

const lab = await startLab();
try {
  const runs = new Map<string, Replay>();
  const run = async (client: string, target: Target, policy: Policy) => {
    const r = await replay(lab, CLIENTS.find((c) => c.name === client)!, target, policy);
    runs.set(`${client} ${target} ${policy}`, r);
    return r;
  };
  for (const target of [...TARGETS, "pool"] as Target[]) {
    for (const client of CLIENTS) {
      for (const policy of ["auto", "client"] as const) await run(client.name, target, policy);
    }
  }
  const get = (client: string, target: Target, policy: Policy) =>
    runs.get(`${client} ${target} ${policy}`)!;
  const isNative = (client: string, target: Target) => NATIVE[target] === client;

  const lines: string[] = [];
  lines.push(
    "Cache-read share of input tokens, requests 2..12, `auto` / `client` (the bytes sent before " +
      "`prompt_cache`); **bold**: the native pair (the provider speaks the client's format; " +
      "Converse has no client of its own, so its reference is Claude Code's Messages).",
    "",
    `| client ↓ target → | ${TARGETS.join(" | ")} |`,
    `| --- | ${TARGETS.map(() => "---").join(" | ")} |`,
  );
  for (const client of CLIENTS) {
    const cells = TARGETS.map((t) => {
      const a = readShare(get(client.name, t, "auto"));
      const c = readShare(get(client.name, t, "client"));
      const cell = `${pct(a)} / ${pct(c)}`;
      return isNative(client.name, t) ? `**${cell}**` : cell;
    });
    lines.push(`| ${client.name} | ${cells.join(" | ")} |`);
  }
  lines.push(
    "",
    "The same session's cost at list prices (USD per million tokens: Claude Sonnet 4.5 $3 input, " +
      "$3.75 5-minute write, $6 one-hour write, $0.30 read, $15 output; GPT-5 and Gemini 2.5 Pro " +
      "$1.25 input, $0.125 read, $10 output), 12 requests: the native pair, and the converted " +
      "client formats' (lowest–highest) with and without `auto`.",
    "",
    "| target | native pair | converted, `auto` | converted, `client` | saved by `auto` |",
    "| --- | --- | --- | --- | --- |",
  );
  for (const target of [...TARGETS, "pool"] as Target[]) {
    const reference = target === "pool" ? "anthropic" : target;
    const native = cost(get(NATIVE[reference], target, "client"));
    const converted = CLIENTS.filter((c) => !isNative(c.name, reference));
    const span = (policy: Policy) => {
      const costs = converted.map((c) => cost(get(c.name, target, policy)));
      return [Math.min(...costs), Math.max(...costs)];
    };
    const [aLow, aHigh] = span("auto");
    const [cLow, cHigh] = span("client");
    const saved = 1 - (aLow + aHigh) / (cLow + cHigh);
    const name = target === "pool" ? "Anthropic, pool of 3 keys" : target;
    lines.push(
      `| ${name} | ${usd(native)} | ${usd(aLow)}–${usd(aHigh)} | ${usd(cLow)}–${usd(cHigh)} | ${
        pct(saved)
      } |`,
    );
  }
  console.log(lines.join("\n"));
} finally {
  await lab.close();
}
