/**
 * Limits counted in a real redis-server (`limits_store.redis_url`): two gateway processes share
 * one limit exactly, and usage counted by one is seen by the other; with Redis stopped,
 * `on_error: allow` admits (counted in a metric) and `deny` answers 503 naming the limits
 * store. Ignored with a message when redis-server is missing (.ci/install-redis.sh).
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config.ts";
import { type Harness, KEY, mockConfig, openaiHeaders, post, startHarness } from "./helpers.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { startGateway } from "./process.ts";
import { freePort, MISSING, REDIS, startRedis } from "./redis_server.ts";

const CHAT = { model: "chat-text", messages: [{ role: "user", content: "hi" }] };

/** Until the gateway's limits store answers (its Redis client connects in the background). */
async function untilReady(url: string) {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${url}/v1/gateway/usage`, { headers: openaiHeaders() });
    await res.body?.cancel();
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the Redis limits store did not become ready");
}

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
      await untilReady(a.url);
      await untilReady(b.url);
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
      assert.equal(upstream.requests.length, 5);
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
      await untilReady(allow.url);
      await untilReady(deny.url);
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
        const calls = deny.upstream.requests.length;
        const res = await chat(deny);
        assert.equal(res.status, 503);
        assert.equal(res.body.error.message, "the limits store (redis) is unavailable");
        assert.equal(deny.upstream.requests.length, calls);
      });
    } finally {
      await allow.close();
      await deny.close();
      if (!stopped) await redis.stop();
    }
  },
});
