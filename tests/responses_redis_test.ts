/**
 * The Redis-backed response store (`response_store.redis_url`) on a real redis-server from
 * Debian, started on a free loopback port: two gateway instances share one Redis (create on
 * one, read, chain and delete on the other), keys carry a TTL in Redis, and with Redis stopped
 * the gateway stays up: requests that do not chain work, chaining and GET answer 503 naming
 * the store, without content in the logs. Stored interactions share it: created on one instance
 * with @google/genai, chained, read and deleted on the other. Ignored with a message when
 * redis-server is missing (.ci/install-redis.sh installs it).
 */
import assert from "node:assert/strict";
import { type Harness, HASHED_KEY, KEY, openaiHeaders, post, startHarness } from "./helpers.ts";
import { freePort, MISSING, REDIS, redisCli, startRedis } from "./redis_server.ts";
import { GoogleGenAI } from "./sdk/deps.ts";
import { recordOf } from "../src/state/record_text.ts";

const gatewayOn = (port: number, timeoutMs?: number) =>
  startHarness({
    tweak: (c) => {
      c.response_store.redis_url = `redis://127.0.0.1:${port}`;
      c.response_store.ttl_s = 3600;
      if (timeoutMs) c.response_store.redis_timeout_ms = timeoutMs;
    },
  });

/** Until the gateway's Redis client is ready (it connects in the background). */
async function untilReady(h: Harness) {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${h.url}/v1/responses/resp_probe`, { headers: openaiHeaders() });
    await res.body?.cancel();
    if (res.status === 404) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the Redis store did not become ready");
}

const create = async (h: Harness, body: Record<string, unknown>, key?: string) => {
  const res = await post(`${h.url}/v1/responses`, openaiHeaders(key), body);
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
};

const get = async (h: Harness, path: string, method = "GET", key?: string) => {
  const res = await fetch(`${h.url}/v1/responses/${path}`, { method, headers: openaiHeaders(key) });
  return { status: res.status, body: await res.json() };
};

if (REDIS === undefined) console.warn(MISSING);

Deno.test({
  name: "redis store: two instances share responses; Redis down → 503 for chaining only",
  ignore: REDIS === undefined,
  async fn(t) {
    const redis = await startRedis(freePort());
    let a = await gatewayOn(redis.port);
    const b = await gatewayOn(redis.port);
    let stopped = false;
    try {
      await untilReady(a);
      await untilReady(b);
      const first = await create(a, { model: "msg-text", input: "The password is swordfish." });
      await t.step("created on A: read on B, with a TTL in Redis, namespaced", async () => {
        const got = await get(b, first.id);
        assert.equal(got.status, 200);
        assert.deepEqual(got.body, first);
        const ttl = Number(
          await redisCli(redis.port, "TTL", `gateway:responses:{team-a}:r:${first.id}`),
        );
        assert.ok(ttl > 3500 && ttl <= 3600, `TTL ${ttl}`);
        assert.equal((await get(b, first.id, "GET", HASHED_KEY)).status, 404, "other key");
      });
      await t.step("chained on B, input_items on A, deleted on B", async () => {
        const second = await create(b, {
          model: "gem-text",
          input: "What is the password?",
          previous_response_id: first.id,
        });
        assert.match(b.upstream.requests.at(-1)!.body, /swordfish/);
        const items = await get(a, `${second.id}/input_items?order=asc`);
        assert.equal(items.status, 200);
        assert.equal(items.body.data.length, 3);
        assert.equal((await get(b, first.id, "DELETE")).body.deleted, true);
        assert.equal((await get(a, first.id)).status, 404);
      });
      const kept = await create(a, { model: "chat-text", input: "kept before the outage" });
      await t.step("a restarted instance reads what it kept before", async () => {
        await a.close();
        a = await gatewayOn(redis.port);
        await untilReady(a);
        assert.equal((await get(a, kept.id)).status, 200);
      });
      await redis.stop();
      stopped = true;
      await t.step("Redis stopped: plain requests still work", async () => {
        for (const body of [{ store: false }, {}, { stream: true }]) {
          const res = await post(`${a.url}/v1/responses`, openaiHeaders(), {
            model: "msg-text",
            input: "hi",
            ...body,
          });
          assert.equal(res.status, 200, JSON.stringify(body));
          assert.match(await res.text(), /mock: hi/);
        }
        // The access-log sink is process-wide: one of the harnesses collected each line.
        const stored = [...a.logs, ...b.logs].map((l) => l.stored);
        assert.equal(stored.filter((s) => s === "failed").length, 2);
        assert.equal(stored.filter((s) => s === "off").length, 1);
      });
      await t.step("Redis stopped: chaining and GET answer 503 naming the store", async () => {
        const res = await post(`${a.url}/v1/responses`, openaiHeaders(), {
          model: "msg-text",
          input: "x",
          previous_response_id: kept.id,
        });
        const body = await res.json();
        assert.equal(res.status, 503);
        assert.match(body.error.message, /response store \(redis\) is unavailable/);
        const got = await get(b, kept.id);
        assert.equal(got.status, 503);
        assert.match(got.body.error.message, /redis/);
      });
      await t.step("nothing stored is logged", () => {
        const logs = JSON.stringify([...a.logs, ...b.logs]);
        assert.ok(!logs.includes("swordfish") && !logs.includes("outage"));
      });
    } finally {
      await a.close();
      await b.close();
      if (!stopped) await redis.stop();
    }
  },
});

Deno.test({
  name: "redis store: @google/genai interactions created on A are chained, read, deleted on B",
  ignore: REDIS === undefined,
  async fn() {
    const redis = await startRedis(freePort());
    const a = await gatewayOn(redis.port);
    const b = await gatewayOn(redis.port);
    const interactions = (h: Harness, key?: string) =>
      new GoogleGenAI({ apiKey: key ?? KEY, httpOptions: { baseUrl: h.url } }).interactions;
    const failed = (p: Promise<unknown>) => p.then(() => 200, (e) => e.status);
    try {
      await untilReady(a);
      await untilReady(b);
      const first = await interactions(a).create({
        model: "msg-text",
        input: "The password is swordfish.",
      });
      const ttl = Number(
        await redisCli(redis.port, "TTL", `gateway:responses:{team-a}:r:${first.id}`),
      );
      assert.ok(ttl > 3500 && ttl <= 3600, `TTL ${ttl}`);
      const second = await interactions(b).create({
        model: "gem-text",
        input: "What is the password?",
        previous_interaction_id: first.id,
      });
      assert.match(b.upstream.requests.at(-1)!.body, /swordfish/);
      assert.equal((await interactions(a).get(second.id)).output_text, second.output_text);
      assert.equal(await failed(interactions(b, HASHED_KEY).get(first.id)), 404, "other key");
      // One store, two formats: neither reads the other's records.
      const response = await create(a, { model: "msg-text", input: "a response" });
      assert.equal(await failed(interactions(b).get(response.id)), 404);
      assert.equal((await get(b, first.id)).status, 400, "not a response id");
      await interactions(b).delete(first.id);
      assert.equal(await failed(interactions(a).get(first.id)), 404);
    } finally {
      await a.close();
      await b.close();
      await redis.stop();
    }
  },
});

/** Lines the gateway writes to stderr while `fn` runs (the store logs there). */
async function stderrOf(fn: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  try {
    await fn();
  } finally {
    console.error = original;
  }
  return lines;
}

Deno.test({
  name:
    "redis store: a stalled (SIGSTOPped) Redis fails calls within redis_timeout_ms; garbage values are missing",
  ignore: REDIS === undefined,
  async fn(t) {
    const redis = await startRedis(freePort());
    const h = await gatewayOn(redis.port, 500);
    let stalled = false;
    // A hang fails the test instead of holding it.
    const soon = () => AbortSignal.timeout(5000);
    try {
      await untilReady(h);
      const kept = await create(h, { model: "msg-text", input: "kept before the stall" });
      await t.step("garbage values are taken for missing; only the key is logged", async () => {
        const garbage = [
          "resp_" + "a".repeat(32),
          "resp_" + "b".repeat(32),
          "resp_" + "c".repeat(32),
        ];
        await redisCli(redis.port, "SET", `gateway:responses:${garbage[0]}`, "{not json: hunter2");
        await redisCli(
          redis.port,
          "SET",
          `gateway:responses:{team-a}:r:${garbage[1]}`,
          '{"owner":"hunter2"}',
        );
        await redisCli(redis.port, "HSET", `gateway:responses:${garbage[2]}`, "f", "hunter2");
        const lines = await stderrOf(async () => {
          for (const id of garbage) {
            const got = await get(h, id);
            assert.equal(got.status, 404, `${id}: ${JSON.stringify(got.body)}`);
          }
          const res = await post(`${h.url}/v1/responses`, openaiHeaders(), {
            model: "msg-text",
            input: "x",
            previous_response_id: garbage[0],
          });
          assert.equal(res.status, 400);
          assert.equal((await res.json()).error.code, "previous_response_not_found");
        });
        assert.ok(lines.length >= 3, lines.join("\n"));
        for (const line of lines) {
          assert.ok(!line.includes("hunter2"), `no stored characters: ${line}`);
          assert.match(line, /"key":"gateway:responses:(\{team-a\}:r:)?resp_/);
        }
      });
      await t.step(
        "a record kept before owners' hash tags (one JSON object) is read and deleted",
        async () => {
          const record = await redisCli(
            redis.port,
            "GET",
            `gateway:responses:{team-a}:r:${kept.id}`,
          );
          const id = "resp_" + "d".repeat(32);
          // As records were kept then: the whole record as one JSON object.
          const legacy = JSON.stringify({ ...recordOf(record), id });
          await redisCli(redis.port, "SET", `gateway:responses:${id}`, legacy);
          assert.equal((await get(h, id)).status, 200);
          assert.equal((await get(h, id, "DELETE")).body.deleted, true);
          assert.equal(await redisCli(redis.port, "EXISTS", `gateway:responses:${id}`), "0");
        },
      );
      await t.step("a GET takes the answer as kept: the record's input is not parsed", async () => {
        const made = await create(h, { model: "msg-text", input: "answered, then read" });
        const key = `gateway:responses:{team-a}:r:${made.id}`;
        const [who, answer] = (await redisCli(redis.port, "GET", key)).split("\n");
        await redisCli(redis.port, "SET", key, `${who}\n${answer}\n[not json`, "KEEPTTL");
        const res = await fetch(`${h.url}/v1/responses/${made.id}`, { headers: openaiHeaders() });
        assert.equal(res.status, 200);
        assert.equal(await res.text(), answer);
      });
      Deno.kill(redis.pid, "SIGSTOP");
      stalled = true;
      await t.step(
        "stalled: a JSON answer and a stream still come back, stored=failed",
        async () => {
          const started = performance.now();
          const json = await fetch(`${h.url}/v1/responses`, {
            method: "POST",
            headers: openaiHeaders(),
            body: JSON.stringify({ model: "msg-text", input: "hi" }),
            signal: soon(),
          });
          assert.equal(json.status, 200);
          assert.match(await json.text(), /mock: hi/);
          const stream = await fetch(`${h.url}/v1/responses`, {
            method: "POST",
            headers: openaiHeaders(),
            body: JSON.stringify({ model: "msg-text", input: "hi", stream: true }),
            signal: soon(),
          });
          assert.match(await stream.text(), /response\.completed/);
          const took = performance.now() - started;
          assert.ok(took < 3000, `took ${took} ms`);
          assert.deepEqual(h.logs.slice(-2).map((l) => l.stored), ["failed", "failed"]);
        },
      );
      await t.step("stalled: GET and chaining answer 503 naming the store", async () => {
        const started = performance.now();
        const got = await fetch(`${h.url}/v1/responses/${kept.id}`, {
          headers: openaiHeaders(),
          signal: soon(),
        });
        assert.equal(got.status, 503);
        assert.match((await got.json()).error.message, /response store \(redis\) is unavailable/);
        const chained = await fetch(`${h.url}/v1/responses`, {
          method: "POST",
          headers: openaiHeaders(),
          body: JSON.stringify({ model: "msg-text", input: "x", previous_response_id: kept.id }),
          signal: soon(),
        });
        assert.equal(chained.status, 503);
        assert.match((await chained.json()).error.message, /redis/);
        const took = performance.now() - started;
        assert.ok(took < 2500, `two calls of 500 ms at most: ${took} ms`);
      });
      Deno.kill(redis.pid, "SIGCONT");
      stalled = false;
      await t.step("resumed: the store answers again", async () => {
        // Once the commands sent before the stall was seen are answered (new ones wait for them).
        let status = 0;
        for (let i = 0; i < 40 && status !== 200; i++) {
          if (i) await new Promise((r) => setTimeout(r, 50));
          status = (await get(h, kept.id)).status;
        }
        assert.equal(status, 200);
      });
    } finally {
      if (stalled) Deno.kill(redis.pid, "SIGCONT");
      await h.close();
      await redis.stop();
    }
  },
});
