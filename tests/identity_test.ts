/**
 * Stored state is owned by identity, fairly (issue 25, point 4): a client key's name is its
 * identity, so two entries cannot share one; and one key filling the embedded store evicts its
 * own oldest responses, never another key's.
 */
import assert from "node:assert/strict";
import { ConfigError, validateConfig } from "../src/config.ts";
import { HASHED_KEY, KEY, openaiHeaders, post, startHarness } from "./helpers.ts";

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
    assert.match(e.message, /keys\[2\]\.name: duplicate key name "team-a"/);
    assert.ok(!e.message.includes("sk-second-party-key"), "no key value in the error");
    return true;
  });
  doc.keys[2].name = "team-c";
  assert.doesNotThrow(() => validateConfig(doc));
});

Deno.test("identity: a key storing more than its share evicts its own oldest responses, not another key's", async () => {
  const h = await startHarness({
    tweak(config) {
      config.response_store = { ...config.response_store, max_mb: 4, max_item_mb: 1 };
    },
  });
  const store = async (key: string, text: string) => {
    const res = await post(`${h.url}/v1/responses`, openaiHeaders(key), {
      model: "resp-text",
      input: text,
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body).slice(0, 300));
    return body.id as string;
  };
  const stored = async (key: string, id: string) => {
    const res = await fetch(`${h.url}/v1/responses/${id}`, { headers: openaiHeaders(key) });
    await res.body?.cancel();
    return res.status;
  };
  try {
    const other = await store(HASHED_KEY, "team-b's one conversation");
    const own: string[] = [];
    // 25 × 200 KB: 5 MB from one key into a 4 MB store (a key's share: 1 MB).
    for (let i = 0; i < 25; i++) own.push(await store(KEY, `${i}`.padEnd(200_000, "x")));
    assert.equal(await stored(HASHED_KEY, other), 200, "another key's response is kept");
    assert.equal(await stored(KEY, own[0]), 404, "its own oldest went");
    assert.equal(await stored(KEY, own[24]), 200, "its newest is kept");
  } finally {
    await h.close();
  }
});
