/**
 * Token windows bound the work in flight (docs/limits.md, "Reservations"): an admitted request
 * of a token-limited identity holds its estimate (its body's characters / 4 and the output it
 * allows) until its usage is counted, and a token window counts what is held as used. So 64
 * requests sent at once to a key with `tokens_per_minute: 20` are not 64 answers: only what fits
 * the window (with at most one request's reservation over it) runs, the rest are refused with a
 * retry a second away, and a refusal counts nothing. The same in memory and in a real
 * redis-server (tests/redis_server.ts).
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { limitsStoreSchema } from "../src/config/limits.ts";
import { RedisLimitStore } from "../src/state/limits/redis.ts";
import {
  type LimitStore,
  MemoryLimitStore,
  RESERVATION_TTL_MS,
} from "../src/state/limits/store.ts";
import { IN_FLIGHT_RETRY_MS } from "../src/state/limits/windows.ts";
import {
  anthropicHeaders,
  type Harness,
  KEY,
  openaiHeaders,
  post,
  startHarness,
} from "./helpers.ts";
import {
  freePort,
  limitsReady,
  MISSING,
  REDIS,
  type RedisServer,
  startRedis,
  storeReady,
} from "./redis_server.ts";

if (REDIS === undefined) console.warn(MISSING);

/**
 * The store-level rules, the same for both stores: reservations count as used; a window reached
 * only by them frees a second on; a refused reservation takes its request back; a count lets
 * its reservation go; one never let go lapses.
 */
async function reservations(store: LimitStore) {
  const limits = { requests_per_minute: 10, tokens_per_minute: 100, tokens_per_day: 1000 };
  const t0 = Date.parse("2026-11-26T12:00:00Z");
  const hold = async (id: string, tokens: number, at: number) => {
    const admitted = await store.admit("r", limits, at);
    assert.equal(admitted.refused, undefined, `${id} admitted`);
    const r = { id, tokens, admittedAt: admitted.at };
    return { r, held: await store.reserve("r", limits, r, at + 1) };
  };
  const a = await hold("a", 80, t0);
  assert.equal(a.held.refused, undefined);
  assert.deepEqual(a.held.windows.tokens_per_minute, { used: 80, reset: t0 + 1, reserved: 80 });
  // 80 of 100 in flight: one more request still fits, and its reservation may pass the limit.
  const b = await hold("b", 40, t0 + 10);
  assert.equal(b.held.refused, undefined);
  assert.equal(b.held.windows.tokens_per_day.used, 120);
  // 120 in flight: the next is refused before it is counted, and it frees as they end.
  const c = await store.admit("r", limits, t0 + 20);
  assert.equal(c.refused, "tokens_per_minute");
  assert.equal(c.windows.tokens_per_minute.reset, t0 + 20 + IN_FLIGHT_RETRY_MS);
  assert.equal(c.windows.requests_per_minute.used, 2);
  // a ends: 30 counted, its 80 let go; 30 + 40 in flight.
  const after = await store.record("r", limits, 30, 0, t0 + 30, a.r);
  assert.equal(after.tokens_per_minute.used, 70);
  assert.equal(after.tokens_per_minute.reserved, 40);
  // Two admitted together at 70: the first holds 50 (120), the second is refused and uncounted.
  const d = await store.admit("r", limits, t0 + 40);
  const e = await store.admit("r", limits, t0 + 41);
  assert.equal(d.refused ?? e.refused, undefined);
  assert.equal(e.windows.requests_per_minute.used, 4);
  const rD = { id: "d", tokens: 50, admittedAt: d.at };
  const heldD = await store.reserve("r", limits, rD, t0 + 42);
  assert.equal(heldD.refused, undefined);
  const heldE = await store.reserve(
    "r",
    limits,
    { id: "e", tokens: 50, admittedAt: e.at },
    t0 + 43,
  );
  assert.equal(heldE.refused, "tokens_per_minute");
  assert.equal(heldE.windows.requests_per_minute.used, 3, "the refused request is not counted");
  assert.equal(heldE.windows.tokens_per_minute.used, 120);
  // Everything settles: only what was counted stays.
  await store.record("r", limits, 20, 0, t0 + 50, b.r);
  const settled = await store.record("r", limits, 25, 0, t0 + 60, rD);
  assert.deepEqual(
    [
      settled.tokens_per_minute.used,
      settled.tokens_per_day.used,
      settled.tokens_per_minute.reserved,
    ],
    [75, 75, undefined],
  );
  // A reservation whose request never reports its end (its instance or thread died) lapses.
  const f = await hold("f", 30, t0 + 70);
  const lapses = t0 + 71 + RESERVATION_TTL_MS;
  const held = await store.read("r", limits, lapses - 1);
  const lapsed = await store.read("r", limits, lapses);
  assert.equal(held.tokens_per_day.reserved, 30);
  assert.equal(lapsed.tokens_per_day.reserved, undefined);
  assert.equal(lapsed.tokens_per_day.used, 75);
  return [a.held, b.held, c, after, d, e, heldD, heldE, settled, f.held, held, lapsed];
}

Deno.test("reservations: the in-memory store", async () => {
  await reservations(new MemoryLimitStore());
});

Deno.test({
  name: "reservations: the Redis store answers as the in-memory one",
  ignore: REDIS === undefined,
  async fn() {
    const redis = await startRedis(freePort());
    const cfg = limitsStoreSchema.parse({
      redis_url: `redis://127.0.0.1:${redis.port}`,
      timeout_ms: 5000,
    });
    const store = RedisLimitStore.connect(cfg, () => {}, undefined, "caller");
    try {
      await storeReady(store);
      assert.deepEqual(await reservations(store), await reservations(new MemoryLimitStore()));
    } finally {
      await store.close();
      await redis.stop();
    }
  },
});

/** Sends `n` streams at once (each runs over a second: the mock's `slow` scenario). */
async function burst(h: Harness, n: number) {
  const body = {
    // Ten deltas 300 ms apart: the first stream runs for over three seconds.
    model: "chat-slow-chunks10",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: true },
  };
  return await Promise.all(Array.from({ length: n }, async () => {
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), body);
    const text = await res.text();
    return { status: res.status, text, retry: res.headers.get("retry-after") };
  }));
}

const usage = async (h: Harness) =>
  (await (await fetch(`${h.url}/v1/gateway/usage`, { headers: openaiHeaders() })).json()).windows;

/** Each mock answer is 18 tokens: the window may pass its limit by at most one of them. */
const ANSWER = 18;

async function burstOnLimits(t: Deno.TestContext, store: (c: Config, prefix: string) => void) {
  for (const window of ["tokens_per_minute", "tokens_per_day"] as const) {
    await t.step(`${window}: 20 is passed by one answer at most`, async () => {
      const h = await startHarness({
        tweak: (c) => {
          store(c, `gateway:limits:${window}:`);
          c.keys[0] = { ...c.keys[0], limits: { [window]: 20, requests_per_minute: 1000 } };
        },
      });
      try {
        await limitsReady(h.url, KEY);
        const calls = () => h.upstream.requests.filter((r) => r.method === "POST").length;
        const answers = await burst(h, 64);
        const ok = answers.filter((a) => a.status === 200);
        assert.equal(ok.length, 1, "one holds the window while it runs; 63 wait for it");
        assert.equal(calls(), 1, "no upstream call for a refusal");
        for (const refused of answers.filter((a) => a.status !== 200)) {
          assert.equal(refused.status, 429);
          const { error } = JSON.parse(refused.text);
          assert.equal(error.code, "rate_limit_exceeded", "a pace, not a spent budget");
          assert.match(
            error.message,
            new RegExp(
              `its limit ${window} \\(20 [^)]+\\)+ with \\d+ reserved by requests in flight`,
            ),
          );
          // A second on the store's clock (Redis's, counted from before the call: at most 2).
          assert.ok(["1", "2"].includes(refused.retry!), `retry-after ${refused.retry}`);
        }
        const windows = await usage(h);
        assert.equal(windows[window].used, ANSWER);
        assert.equal(windows.requests_per_minute.used, 1, "the refused counted nothing");
        // Under the limit again (18 of 20): one more runs, then the window is spent.
        const second = await burst(h, 8);
        assert.equal(second.filter((a) => a.status === 200).length, 1);
        assert.ok((await usage(h))[window].used <= 20 + ANSWER);
      } finally {
        await h.close();
      }
    });
  }
}

Deno.test("reservations: 64 streams at once on a 20-token window, in memory", async (t) => {
  await burstOnLimits(t, () => {});
});

Deno.test({
  name: "reservations: 64 streams at once on a 20-token window, in Redis",
  ignore: REDIS === undefined,
  async fn(t) {
    let redis: RedisServer | undefined;
    try {
      redis = await startRedis(freePort());
      const url = `redis://127.0.0.1:${redis.port}`;
      await burstOnLimits(t, (c, prefix) => {
        // A loaded test machine may take longer than the default 250 ms per call.
        c.limits_store = {
          redis_url: url,
          redis_prefix: prefix,
          timeout_ms: 5000,
          on_error: "allow",
        };
      });
    } finally {
      await redis?.stop();
    }
  },
});

Deno.test("reservations: a request holds the output it allows (max_tokens), else 4096", async () => {
  const h = await startHarness({
    tweak: (c) => {
      c.keys[0] = { ...c.keys[0], limits: { tokens_per_minute: 5000 } };
    },
  });
  try {
    // About 25 tokens of body and max_tokens 1000 each: five fit under 5000 while they run.
    const body = {
      model: "msg-slow-chunks10",
      max_tokens: 1000,
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    };
    const capped = await Promise.all(Array.from({ length: 6 }, async () => {
      const res = await post(`${h.url}/v1/messages`, anthropicHeaders(), body);
      await res.text();
      return res.status;
    }));
    assert.deepEqual(capped.toSorted(), [200, 200, 200, 200, 200, 429]);
    // Without a bound of its own a chat request holds 4096 for its output: two fit, not three.
    const uncapped = await burst(h, 3);
    assert.deepEqual(uncapped.map((a) => a.status).toSorted(), [200, 200, 429]);
  } finally {
    await h.close();
  }
});
