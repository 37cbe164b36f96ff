/**
 * The limit windows through the stores' module API, whose clock is an argument: calendar
 * windows free at UTC midnight and at the month's first, sliding ones when enough of their
 * oldest entries leave; the Go-style durations of OpenAI's reset headers.
 */
import assert from "node:assert/strict";
import { MemoryLimitStore } from "../src/state/limits/store.ts";
import { day, month, SlidingWindow } from "../src/state/limits/windows.ts";
import { goDuration } from "../plugins/openai.ts";

const at = (iso: string) => Date.parse(iso);

Deno.test("windows: calendar day and month in UTC", () => {
  assert.deepEqual(day(at("2026-11-26T23:59:59.999Z")), {
    key: "2026-11-26",
    end: at("2026-11-27T00:00:00Z"),
  });
  assert.deepEqual(month(at("2026-12-31T23:00:00Z")), {
    key: "2026-12",
    end: at("2027-01-01T00:00:00Z"),
  });
});

Deno.test("windows: tokens_per_day frees at UTC midnight, spend at the month's first", async () => {
  const store = new MemoryLimitStore();
  const limits = { tokens_per_day: 10, spend_per_month_usd: 1 };
  const late = at("2026-11-30T23:59:00Z");
  await store.record("a", limits, 10, 1, late);
  const refused = await store.admit("a", limits, late + 1000);
  assert.equal(refused.refused, "tokens_per_day");
  assert.equal(refused.windows.tokens_per_day.reset, at("2026-12-01T00:00:00Z"));
  const next = await store.admit("a", limits, at("2026-12-01T00:00:00Z"));
  assert.equal(next.refused, undefined);
  assert.equal(next.windows.tokens_per_day.used, 0);
  assert.equal(next.windows.spend_per_month_usd.used, 0);
});

Deno.test("windows: a sliding tokens window frees when enough of the oldest leave", async () => {
  const store = new MemoryLimitStore(60_000);
  const limits = { tokens_per_minute: 100 };
  const t0 = at("2026-11-26T12:00:00Z");
  await store.record("a", limits, 60, 0, t0);
  await store.record("a", limits, 30, 0, t0 + 10_000);
  await store.record("a", limits, 30, 0, t0 + 20_000);
  const refused = await store.admit("a", limits, t0 + 30_000);
  assert.equal(refused.refused, "tokens_per_minute");
  assert.deepEqual(refused.windows.tokens_per_minute, { used: 120, reset: t0 + 60_000 });
  // At exactly 60 s the first entry has left: 60 of 100.
  const freed = await store.admit("a", limits, t0 + 60_000);
  assert.equal(freed.refused, undefined);
  assert.equal(freed.windows.tokens_per_minute.used, 60);
  // Another identity's window is its own.
  assert.equal((await store.admit("b", limits, t0 + 30_000)).refused, undefined);
});

Deno.test("windows: a sliding window's state, pruning, and durations", () => {
  const w = new SlidingWindow(10_000);
  assert.deepEqual(w.state(20, 30), { used: 0, reset: 30 });
  for (const at of [0, 1000, 2000]) w.add(at, 5);
  assert.deepEqual(w.state(10, 2500), { used: 15, reset: 11_000 });
  assert.deepEqual(w.state(20, 2500), { used: 15, reset: 10_000 });
  w.prune(10_500);
  assert.deepEqual(w.state(undefined, 10_500), { used: 10, reset: 11_000 });
  assert.deepEqual(
    [0, 1, 999, 1000, 59_001, 60_000, 360_000, 3_723_000].map(goDuration),
    ["0s", "1s", "1s", "1s", "1m0s", "1m0s", "6m0s", "1h2m3s"],
  );
});

/** The buckets a window keeps (its memory). */
const buckets = (w: SlidingWindow) => (w as unknown as { times: number[] }).times.length;

Deno.test("windows: a busy sliding window keeps one bucket a second, leaving with its latest entry", () => {
  const w = new SlidingWindow(60_000);
  // 200,000 entries over two minutes: at most 61 buckets at any time.
  let most = 0;
  for (let i = 0; i < 200_000; i++) {
    const at = Math.floor(i * 0.6);
    w.prune(at);
    w.add(at, 1);
    most = Math.max(most, buckets(w));
  }
  assert.ok(most <= 61, `${most} buckets`);
  // Entries of one second share a bucket, which leaves with the latest of them (never early).
  const v = new SlidingWindow(60_000);
  v.add(5_100, 1);
  v.add(5_900, 1);
  v.prune(65_100);
  assert.deepEqual(v.state(undefined, 65_100), { used: 2, reset: 65_900 });
  v.prune(65_900);
  assert.deepEqual(v.state(undefined, 65_900), { used: 0, reset: 65_900 });
});

Deno.test("windows: an identity without a per-minute limit keeps no sliding entries", async () => {
  const store = new MemoryLimitStore();
  const t0 = at("2026-11-26T12:00:00Z");
  for (let i = 0; i < 1000; i++) {
    await store.admit("a", { tokens_per_day: 1e9 }, t0 + i * 1000);
    await store.record("a", { tokens_per_day: 1e9 }, 10, 0, t0 + i * 1000);
  }
  const state = (store as unknown as { states: Map<string, Record<string, SlidingWindow>> })
    .states.get("a")!;
  assert.deepEqual([buckets(state.requests), buckets(state.tokens)], [0, 0]);
  assert.equal((await store.read("a", { tokens_per_day: 1e9 }, t0)).tokens_per_day.used, 10_000);
});

Deno.test("windows: a refusal names the reached limit that frees last", async () => {
  const store = new MemoryLimitStore();
  const limits = { requests_per_minute: 1, tokens_per_day: 10 };
  const t0 = at("2026-11-26T12:00:00Z");
  await store.admit("a", limits, t0);
  await store.record("a", limits, 10, 0, t0);
  const refused = await store.admit("a", limits, t0 + 1000);
  assert.equal(refused.refused, "tokens_per_day");
  // Only the minute's pace reached: that one.
  await store.admit("b", limits, t0);
  assert.equal((await store.admit("b", limits, t0 + 1000)).refused, "requests_per_minute");
});
