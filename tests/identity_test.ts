/**
 * Stored state is owned by identity, fairly (issue 25, point 4): a client key's name is its
 * identity, so two entries cannot share one; and one key filling the embedded store evicts its
 * own oldest responses, never another key's.
 */
import assert from "node:assert/strict";
import { ConfigError, validateConfig } from "../src/config/config.ts";
import { HASHED_KEY, KEY, openaiHeaders, post, startHarness } from "./helpers.ts";
import { freePort, REDIS, redisCli, startRedis } from "./redis_server.ts";

Deno.test("identity: two keys with the same name are a config error naming the entry", () => {
  const doc = {
    keys: [
      { name: "team-a", key: "sk-first-party-key" },
      { name: "team-b", key: "sk-other-party-key" },
      { name: "team-a", key: "sk-second-party-key" },
    ],
    providers: [{ name: "p", api: "chat", base_url: "http://127.0.0.1:9" }],
    routes: [{ models: ["*"], provider: "p" }],
  };
  assert.throws(() => validateConfig(doc), (e: Error) => {
    assert.ok(e instanceof ConfigError, String(e));
    assert.match(e.message, /keys\[2\]\.name: a name another key has/);
    assert.ok(!e.message.includes("sk-second-party-key"), "no key value in the error");
    return true;
  });
  doc.keys[2].name = "team-c";
  assert.doesNotThrow(() => validateConfig(doc));
});

/**
 * One key stores 25 × 200 KB (5 MB) into a 4 MB store whose share per key is 1 MB (the default
 * quarter); another key's one response must survive it.
 */
async function oneKeyFillsTheStore(redisUrl?: string) {
  const h = await startHarness({
    tweak(config) {
      Object.assign(config.response_store, { max_mb: 4, max_item_mb: 1, redis_url: redisUrl });
    },
  });
  const store = async (key: string, text: string) => {
    const res = await post(`${h.url}/v1/responses`, openaiHeaders(key), {
      model: "resp-text",
      input: text,
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body).slice(0, 300));
    assert.equal(h.logs.at(-1)?.stored, "kept");
    return body.id as string;
  };
  const stored = async (key: string, id: string) => {
    const res = await fetch(`${h.url}/v1/responses/${id}`, { headers: openaiHeaders(key) });
    await res.body?.cancel();
    return res.status;
  };
  try {
    // The Redis client connects in the background.
    for (let i = 0; i < 100 && (await stored(KEY, "resp_" + "0".repeat(32))) !== 404; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const other = await store(HASHED_KEY, "team-b's one conversation");
    const own: string[] = [];
    for (let i = 0; i < 25; i++) own.push(await store(KEY, `${i}`.padEnd(200_000, "x")));
    assert.equal(await stored(HASHED_KEY, other), 200, "another key's response is kept");
    assert.equal(await stored(KEY, own[0]), 404, "its own oldest went");
    assert.equal(await stored(KEY, own[24]), 200, "its newest is kept");
  } finally {
    await h.close();
  }
}

Deno.test("identity: a key storing more than its share evicts its own oldest responses, not another key's (memory)", async () => {
  await oneKeyFillsTheStore();
});

Deno.test({
  name:
    "identity: a key storing more than its share evicts its own oldest responses, not another key's (Redis)",
  ignore: REDIS === undefined,
  async fn() {
    const redis = await startRedis(freePort());
    try {
      await oneKeyFillsTheStore(`redis://127.0.0.1:${redis.port}`);
      // The booking in Redis: team-a holds at most its share (1 MiB of JSON characters).
      const total = Number(
        await redisCli(redis.port, "HGET", "gateway:responses:{team-a}:sizes", ""),
      );
      assert.ok(total > 800_000 && total <= 1024 * 1024, `team-a holds ${total}`);
    } finally {
      await redis.stop();
    }
  },
});
