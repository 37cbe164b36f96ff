/**
 * Cache affinity in src/state/health.ts: a request naming its session keeps to one target of a
 * priority and one key of a pool while they are healthy (weighted rendezvous hashing); one
 * without a session is balanced as before (smooth weighted round-robin, keys in rotation).
 */
import assert from "node:assert/strict";
import { validateConfig } from "../src/config/config.ts";
import { Health } from "../src/state/health.ts";

const targets = [
  { id: "0.0", provider: { name: "east" }, weight: 3, priority: 0 },
  { id: "0.1", provider: { name: "west" }, weight: 1, priority: 0 },
];
const COOLDOWN = { failures: 1, seconds: 30, max_seconds: 300 };

function pool(n: number) {
  const config = validateConfig({
    keys: [{ name: "k", key: "client-key-1" }],
    providers: [{
      name: "p",
      api: "chat",
      base_url: "http://127.0.0.1:1",
      api_keys: Array.from({ length: n }, (_, i) => `sk-pool-key-${i}`),
    }],
    routes: [{ models: ["*"], provider: "p" }],
  });
  return config.providers[0];
}

Deno.test("affinity: without a session, weights 3:1 are exactly 750/250 per 1,000 (round-robin)", () => {
  const health = new Health();
  const counts: Record<string, number> = {};
  for (let i = 0; i < 1000; i++) {
    const name = health.plan(targets)[0].provider.name;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  assert.deepEqual(counts, { east: 750, west: 250 });
});

Deno.test("affinity: a session keeps its target; a cooling target moves only its own sessions", () => {
  let now = 0;
  const health = new Health(() => now);
  const sessions = Array.from({ length: 400 }, (_, i) => `session-${i}`);
  const pick = (s: string) => health.plan(targets, s)[0].provider.name;
  const first = sessions.map(pick);
  assert.deepEqual(sessions.map(pick), first, "the same pick every time");
  const east = first.filter((p) => p === "east").length;
  assert.ok(Math.abs(east - 300) <= 30, `weighted: ${east} of 400 east`);
  health.failed("west", COOLDOWN);
  assert.ok(sessions.every((s) => pick(s) === "east"), "west cooling: all to east");
  now += 31_000;
  assert.deepEqual(sessions.map(pick), first, "back when it is healthy again");
  health.failed("east", COOLDOWN);
  const moved = sessions.map(pick);
  assert.ok(moved.every((p) => p === "west"));
});

Deno.test("affinity: a session keeps its pool key; a cooling key moves only its sessions", () => {
  let now = 0;
  const health = new Health(() => now);
  const provider = pool(3);
  const sessions = Array.from({ length: 300 }, (_, i) => `s${i}`);
  const key = (s: string) => health.key(provider, s)!.index;
  const first = sessions.map(key);
  assert.deepEqual(sessions.map(key), first);
  for (const k of [0, 1, 2]) {
    const n = first.filter((i) => i === k).length;
    assert.ok(n > 70 && n < 130, `key ${k}: ${n} of 300 sessions`);
  }
  health.coolKey(provider, { value: "", name: "p#1", index: 1 }, 10_000);
  const during = sessions.map(key);
  sessions.forEach((_, i) => {
    if (first[i] !== 1) assert.equal(during[i], first[i], "other sessions stay");
    else assert.notEqual(during[i], 1, "its sessions move");
  });
  now += 10_001;
  assert.deepEqual(sessions.map(key), first);
  // Without a session: the keys in rotation, as before.
  assert.deepEqual([0, 1, 2, 3].map(() => health.key(provider)!.index), [0, 1, 2, 0]);
});
