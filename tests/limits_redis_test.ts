/**
 * Limits counted in a real redis-server (`limits_store.redis_url`): two gateway processes share
 * one limit exactly, and usage counted by one is seen by the other; with Redis stopped,
 * `on_error: allow` admits (counted in a metric) and `deny` answers 503 naming the limits
 * store. Ignored with a message when redis-server is missing (.ci/install-redis.sh).
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { type Harness, KEY, mockConfig, openaiHeaders, post, startHarness } from "./helpers.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { startGateway } from "./process.ts";
import { freePort, limitsReady, MISSING, REDIS, startRedis, storeReady } from "./redis_server.ts";
import { RedisLimitStore } from "../src/state/limits/redis.ts";
import { type LimitStore, MemoryLimitStore } from "../src/state/limits/store.ts";
import { limitsStoreSchema } from "../src/config/limits.ts";

const CHAT = { model: "chat-text", messages: [{ role: "user", content: "hi" }] };

function withLimits(c: Config, redisPort: number, onError: "allow" | "deny" = "allow") {
  c.keys[0] = { ...c.keys[0], limits: { requests_per_minute: 5, tokens_per_day: 30 } };
  c.limits_store = {
    ...c.limits_store,
    redis_url: `redis://127.0.0.1:${redisPort}`,
    on_error: onError,
  };
}

if (REDIS === undefined) console.warn(MISSING);

Deno.test({
  name: "limits in redis: two gateway processes enforce one limit together",
  ignore: REDIS === undefined,
  async fn() {
    const redis = await startRedis(freePort());
    const upstream = await startMockUpstream();
    const dir = await Deno.makeTempDir();
    const config = await mockConfig(upstream.url);
    withLimits(config, redis.port);
    config.keys[0].limits = { requests_per_minute: 5 };
    const a = await startGateway(config, dir);
    const b = await startGateway(config, dir);
    try {
      await limitsReady(a.url, KEY);
      await limitsReady(b.url, KEY);
      // Twelve at once, alternating instances: exactly five get through.
      const statuses = await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          const res = await post(`${[a, b][i % 2].url}/v1/chat/completions`, openaiHeaders(), CHAT);
          await res.body?.cancel();
          return res.status;
        }),
      );
      assert.deepEqual(statuses.filter((s) => s === 200).length, 5, String(statuses));
      assert.deepEqual(statuses.filter((s) => s === 429).length, 7, String(statuses));
      assert.equal(upstream.requests.filter((r) => r.method === "POST").length, 5);
    } finally {
      await a.stop();
      await b.stop();
      await upstream.close();
      await redis.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "limits in redis: tokens counted on one instance refuse on the other; Redis down: allow / deny",
  ignore: REDIS === undefined,
  async fn(t) {
    const redis = await startRedis(freePort());
    const allow = await startHarness({ tweak: (c) => withLimits(c, redis.port) });
    const deny = await startHarness({ tweak: (c) => withLimits(c, redis.port, "deny") });
    let stopped = false;
    const chat = async (h: Harness) => {
      const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(KEY), CHAT);
      return { status: res.status, body: await res.json() };
    };
    try {
      await limitsReady(allow.url, KEY);
      await limitsReady(deny.url, KEY);
      await t.step(
        "an answer counted on one is seen by the next request on the other",
        async () => {
          assert.equal((await chat(allow)).status, 200);
          assert.equal((await chat(deny)).status, 200); // 18 < 30: admitted, ends at 36
          const refused = await chat(allow);
          assert.equal(refused.status, 429);
          assert.equal(refused.body.error.code, "insufficient_quota");
        },
      );
      await redis.stop();
      stopped = true;
      await t.step("Redis stopped: on_error allow admits, logged and counted", async () => {
        const res = await chat(allow);
        assert.equal(res.status, 200);
        assert.match(
          allow.gw.metrics.expose(),
          /gateway_limits_store_errors_total\{store="redis"\} [1-9]/,
        );
      });
      await t.step("Redis stopped: on_error deny answers 503 naming the limits store", async () => {
        const posts = () => deny.upstream.requests.filter((r) => r.method === "POST").length;
        const calls = posts();
        const res = await chat(deny);
        assert.equal(res.status, 503);
        assert.equal(res.body.error.message, "the limits store (redis) is unavailable");
        assert.equal(posts(), calls);
      });
    } finally {
      await allow.close();
      await deny.close();
      if (!stopped) await redis.stop();
    }
  },
});

/** One history of checks and counts at given times; every answer, in order. */
async function history(store: LimitStore) {
  const limits = { requests_per_minute: 3, tokens_per_minute: 100, tokens_per_day: 150 };
  const t0 = Date.parse("2026-11-26T23:59:00Z");
  const out: unknown[] = [];
  for (const [dt, tokens] of [[0, 60], [10_000, 30], [20_000, 30], [30_000, 0], [60_000, 10]]) {
    out.push(await store.admit("team-a", limits, t0 + dt));
    if (tokens) out.push(await store.record("team-a", limits, tokens, 0.25, t0 + dt + 1));
  }
  out.push(await store.read("team-a", limits, t0 + 61_000));
  return out;
}

Deno.test({
  name: "limits in redis: the Lua script answers exactly as the in-memory store",
  ignore: REDIS === undefined,
  async fn() {
    const redis = await startRedis(freePort());
    const cfg = limitsStoreSchema.parse({ redis_url: `redis://127.0.0.1:${redis.port}` });
    const store = RedisLimitStore.connect(cfg, () => {}, undefined, "caller");
    try {
      await storeReady(store);
      const expected = await history(new MemoryLimitStore());
      assert.deepEqual(await history(store), expected);
      // The history crosses midnight UTC and refuses on the way.
      assert.ok(expected.some((a) => (a as { refused?: string }).refused === "tokens_per_minute"));
    } finally {
      await store.close();
      await redis.stop();
    }
  },
});

/**
 * A loopback proxy to Redis whose answers arrive `delayMs` late: an instance behind it counts
 * slowly, as over a congested network.
 */
function slowRedisProxy(redisPort: number, delayMs: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const client of listener) {
      const server = await Deno.connect({ hostname: "127.0.0.1", port: redisPort });
      conns.push(client, server);
      client.readable.pipeTo(server.writable).catch(() => {});
      server.readable.pipeThrough(
        new TransformStream({
          transform: (chunk, c) =>
            new Promise((r) => setTimeout(() => r(c.enqueue(chunk)), delayMs)),
        }),
      ).pipeTo(client.writable).catch(() => {});
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // closed by its peer
        }
      }
    },
  };
}

Deno.test({
  name:
    "limits in redis: a stream closes only once its usage is counted, seen by the other instance",
  ignore: REDIS === undefined,
  async fn() {
    const redis = await startRedis(freePort());
    const slow = slowRedisProxy(redis.port, 300);
    const limited = (port: number) => (c: Config) => {
      withLimits(c, port);
      c.keys[0].limits = { tokens_per_day: 10 };
      c.limits_store = { ...c.limits_store, timeout_ms: 5000 };
    };
    // A counts through the slow proxy; B reads Redis directly.
    const a = await startHarness({ tweak: limited(slow.port) });
    const b = await startHarness({ tweak: limited(redis.port) });
    try {
      await limitsReady(a.url, KEY);
      await limitsReady(b.url, KEY);
      const stream = { ...CHAT, stream: true, stream_options: { include_usage: true } };
      const res = await post(`${a.url}/v1/chat/completions`, openaiHeaders(KEY), stream);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /\[DONE\]/);
      // The client saw the stream end: its 18 tokens are in Redis before anything else happens.
      const next = await post(`${b.url}/v1/chat/completions`, openaiHeaders(KEY), CHAT);
      assert.equal(next.status, 429, await next.clone().text());
      assert.equal((await next.json()).error.code, "insufficient_quota");
    } finally {
      await a.close();
      await b.close();
      slow.close();
      await redis.stop();
    }
  },
});

/** A Redis command's answer through redis-cli. */
async function redisCli(port: number, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("redis-cli", { args: ["-p", String(port), ...args] }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test({
  name: "limits in redis: a busy window keeps one bucket a second, and a full one stays cheap",
  ignore: REDIS === undefined,
  async fn() {
    const redis = await startRedis(freePort());
    // A loaded test machine may take longer than the default 250 ms per call.
    const url = `redis://127.0.0.1:${redis.port}`;
    const cfg = limitsStoreSchema.parse({ redis_url: url, timeout_ms: 5000 });
    const store = RedisLimitStore.connect(cfg, () => {}, undefined, "caller");
    try {
      await storeReady(store);
      const limits = { requests_per_minute: 1_000_000, tokens_per_minute: 1_000_000 };
      const t0 = Date.parse("2026-11-26T12:00:00Z");
      // 600 requests over 30 s: thirty buckets each window, not 600 entries.
      for (let i = 0; i < 600; i++) {
        await store.admit("busy", limits, t0 + i * 50);
        await store.record("busy", limits, 1, 0, t0 + i * 50);
      }
      assert.equal(await redisCli(redis.port, "HLEN", "gateway:limits:{busy}:rqs"), "30");
      assert.equal(await redisCli(redis.port, "HLEN", "gateway:limits:{busy}:tks"), "30");
      // Full: the refusal walks the buckets (20 tokens each) to the one leaving it under 50.
      const full = await store.admit("busy", { tokens_per_minute: 50 }, t0 + 30_000);
      assert.equal(full.refused, "tokens_per_minute");
      assert.deepEqual(full.windows.tokens_per_minute, { used: 600, reset: t0 + 27_950 + 60_000 });
      // A window without a limit keeps nothing.
      await store.admit("free", { tokens_per_day: 100 }, t0);
      assert.equal(await redisCli(redis.port, "EXISTS", "gateway:limits:{free}:rqs"), "0");
    } finally {
      await store.close();
      await redis.stop();
    }
  },
});

Deno.test({
  name: "limits in redis: sliding windows run on Redis's clock, not the instance's",
  ignore: REDIS === undefined,
  async fn() {
    const redis = await startRedis(freePort());
    const cfg = limitsStoreSchema.parse({ redis_url: `redis://127.0.0.1:${redis.port}` });
    const store = RedisLimitStore.connect(cfg, () => {});
    try {
      await storeReady(store);
      // An instance whose clock is an hour behind still frees the window a minute from now.
      const before = Date.now();
      const { windows } = await store.admit("a", { requests_per_minute: 5 }, before - 3_600_000);
      assert.ok(windows.requests_per_minute.reset >= before + 60_000 - 1000);
      assert.ok(windows.requests_per_minute.reset <= Date.now() + 60_000 + 1000);
    } finally {
      await store.close();
      await redis.stop();
    }
  },
});

Deno.test({
  name:
    "limits in redis: a stalled (SIGSTOPped) Redis fails checks fast per on_error, and nothing queued replays when it recovers",
  ignore: REDIS === undefined,
  async fn(t) {
    const redis = await startRedis(freePort());
    const stalling = (onError: "allow" | "deny") => (c: Config) => {
      withLimits(c, redis.port, onError);
      c.keys[0].limits = { requests_per_minute: 1000 };
      c.limits_store = { ...c.limits_store, timeout_ms: 200, redis_prefix: `stall:${onError}:` };
    };
    const allow = await startHarness({ tweak: stalling("allow") });
    const deny = await startHarness({ tweak: stalling("deny") });
    let stopped = false;
    const chat = async (h: Harness) => {
      const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(KEY), CHAT);
      return { status: res.status, body: await res.json() };
    };
    const requests = async (h: Harness) => {
      const res = await fetch(`${h.url}/v1/gateway/usage`, { headers: openaiHeaders(KEY) });
      const body = await res.json();
      return res.status === 200 ? body.windows.requests_per_minute.used : undefined;
    };
    try {
      await limitsReady(allow.url, KEY);
      await limitsReady(deny.url, KEY);
      assert.equal((await chat(allow)).status, 200);
      assert.equal(await requests(allow), 1);
      Deno.kill(redis.pid, "SIGSTOP");
      stopped = true;
      await t.step(
        "allow: thirty checks, one waits out its deadline, the rest fail at once",
        async () => {
          const started = performance.now();
          for (let i = 0; i < 30; i++) assert.equal((await chat(allow)).status, 200);
          const ms = performance.now() - started;
          // Before, each waited 200 ms for its check and 200 for its count: 12 s, all queued.
          assert.ok(ms < 30 * 200, `30 requests took ${Math.round(ms)} ms`);
          assert.match(
            allow.gw.metrics.expose(),
            /gateway_limits_store_errors_total\{store="redis"\} [1-9]/,
          );
          assert.equal(await requests(allow), undefined, "the usage endpoint's 503");
        },
      );
      await t.step("deny: 503 naming the limits store, at once", async () => {
        for (let i = 0; i < 10; i++) {
          const res = await chat(deny);
          assert.equal(res.status, 503);
          assert.equal(res.body.error.message, "the limits store (redis) is unavailable");
        }
      });
      Deno.kill(redis.pid, "SIGCONT");
      stopped = false;
      await t.step(
        "recovered: only the calls sent before the stall was seen are counted",
        async () => {
          let used: number | undefined;
          for (let i = 0; i < 100 && used === undefined; i++) {
            used = await requests(allow);
            if (used === undefined) await new Promise((r) => setTimeout(r, 50));
          }
          // The first request and the one check that met the stall; before, all 30 replayed.
          assert.ok(used !== undefined && used <= 2, `requests_per_minute used ${used}`);
          assert.equal((await chat(allow)).status, 200, "checks flow again");
        },
      );
    } finally {
      if (stopped) Deno.kill(redis.pid, "SIGCONT");
      await allow.close();
      await deny.close();
      await redis.stop();
    }
  },
});
