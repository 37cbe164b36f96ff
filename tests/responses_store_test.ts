/**
 * Stored responses on routes where the gateway builds the response: chaining with
 * `previous_response_id`, GET / DELETE /v1/responses/{id}, input_items paging, `store: false`
 * (by the request, the route or `response_store.enabled`), per-key isolation, the store's bounds (size, age, item size), and that nothing stored is
 * ever logged.
 */
import assert from "node:assert/strict";
import { type ResponseStoreConfig, validateConfig } from "../src/config/config.ts";
import { MemoryStore, type StoredTurn } from "../src/state/store.ts";
import { SharedConversationStore, SharedStores } from "../src/state/shared_stores.ts";
import {
  googleHeaders,
  type Harness,
  HASHED_KEY,
  lastResponseId,
  mockConfig,
  openaiHeaders,
  post,
  startHarness,
  wsExchange,
} from "./helpers.ts";

type Json = Record<string, unknown>;

const create = async (h: Harness, body: Json, key?: string) => {
  const res = await post(`${h.url}/v1/responses`, openaiHeaders(key), body);
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
};

const get = (h: Harness, path: string, key?: string, method = "GET") =>
  fetch(`${h.url}/v1/responses/${path}`, { method, headers: openaiHeaders(key) });

/** The status, with the body consumed. */
async function statusOf(res: Promise<Response>): Promise<number> {
  const r = await res;
  await r.body?.cancel();
  return r.status;
}

async function error(res: Response, status: number): Promise<Json> {
  const body = await res.json();
  assert.equal(res.status, status, JSON.stringify(body));
  return body.error;
}

Deno.test("store: three chained turns, retrieve, input_items paging, delete", async (t) => {
  const h = await startHarness();
  try {
    const model = "msg-text";
    const first = await create(h, { model, input: "Remember the word teal." });
    const second = await create(h, {
      model,
      input: "Which word?",
      previous_response_id: first.id,
    });
    const third = await create(h, {
      model,
      input: [{ role: "user", content: "Say it again." }],
      previous_response_id: second.id,
      stream: false,
    });
    await t.step("each turn sends the whole chain upstream", () => {
      const sent = JSON.parse(h.upstream.requests.at(-1)!.body);
      const texts = JSON.stringify(sent.messages);
      for (const s of ["Remember the word teal", "Which word?", "Say it again", "mock: Which"]) {
        assert.ok(texts.includes(s), s);
      }
      assert.equal(third.previous_response_id, second.id);
    });
    await t.step("GET returns the response as the client received it", async () => {
      const res = await get(h, third.id);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), third);
    });
    await t.step("input_items: the whole input, newest first, paged", async () => {
      const all = await (await get(h, `${third.id}/input_items?limit=100&order=asc`)).json();
      assert.equal(all.object, "list");
      // turn 1 input, its answer, turn 2 input, its answer, turn 3 input
      assert.equal(all.data.length, 5);
      assert.equal(all.has_more, false);
      assert.equal(all.data[0].content[0].text, "Remember the word teal.");
      assert.equal(all.data[0].content[0].type, "input_text");
      assert.equal(all.data[1].role, "assistant");
      assert.equal(all.first_id, all.data[0].id);
      assert.equal(all.last_id, all.data[4].id);
      const ids = all.data.map((i: Json) => i.id);
      assert.equal(new Set(ids).size, 5, "every item has its own id");
      const page1 = await (await get(h, `${third.id}/input_items?limit=2`)).json();
      assert.deepEqual(page1.data.map((i: Json) => i.id), [ids[4], ids[3]]);
      assert.equal(page1.has_more, true);
      const page2 = await (await get(h, `${third.id}/input_items?limit=2&after=${page1.last_id}`))
        .json();
      assert.deepEqual(page2.data.map((i: Json) => i.id), [ids[2], ids[1]]);
      const page3 = await (await get(h, `${third.id}/input_items?limit=2&after=${page2.last_id}`))
        .json();
      assert.deepEqual(page3.data.map((i: Json) => i.id), [ids[0]]);
      assert.equal(page3.has_more, false);
    });
    await t.step("bad paging parameters and ids: 400 naming the field", async () => {
      for (
        const [q, field] of [["limit=0", "limit"], ["limit=101", "limit"], ["limit=x", "limit"], [
          "order=up",
          "order",
        ], ["after=nope", "after"]]
      ) {
        const e = await error(await get(h, `${third.id}/input_items?${q}`), 400);
        assert.equal(e.param, field, q);
      }
      const e = await error(await get(h, "not-an-id"), 400);
      assert.equal(e.param, "response_id");
    });
    await t.step("DELETE, then the id is gone everywhere", async () => {
      const res = await get(h, second.id, undefined, "DELETE");
      assert.deepEqual(await res.json(), { id: second.id, object: "response", deleted: true });
      await error(await get(h, second.id), 404);
      await error(await get(h, second.id, undefined, "DELETE"), 404);
      const chained = await post(`${h.url}/v1/responses`, openaiHeaders(), {
        model,
        input: "x",
        previous_response_id: second.id,
      });
      assert.equal((await error(chained, 400)).code, "previous_response_not_found");
      // Later responses keep their own copy of the chain.
      assert.equal(await statusOf(get(h, third.id)), 200);
    });
    await t.step("nothing stored reaches the access log", () => {
      const log = JSON.stringify(h.logs);
      assert.ok(!log.includes("teal"), "no input text in logs");
      assert.ok(!log.includes("mock:"), "no output text in logs");
      const stored = h.logs.filter((l) => l.endpoint === "responses").map((l) => l.stored);
      assert.deepEqual(stored, ["kept", "kept", "kept", undefined]);
    });
  } finally {
    await h.close();
  }
});

Deno.test("store: a streamed response is kept before its end reaches the client", async () => {
  const h = await startHarness();
  try {
    for (const model of ["gem-text", "chat-tool", "resp-think"]) {
      const res = await post(`${h.url}/v1/responses`, openaiHeaders(), {
        model,
        input: "hi",
        stream: true,
      });
      const text = await res.text();
      const completed = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) =>
        JSON.parse(l.slice(6))
      ).find((e) => e.type === "response.completed");
      const got = await get(h, completed.response.id);
      assert.equal(got.status, 200, model);
      assert.deepEqual(await got.json(), completed.response);
    }
  } finally {
    await h.close();
  }
});

Deno.test("store: store:false is not kept; keys never see each other's responses", async () => {
  const h = await startHarness();
  try {
    const unkept = await create(h, { model: "chat-text", input: "hi", store: false });
    assert.equal(unkept.store, false);
    await error(await get(h, unkept.id), 404);
    const chained = await post(`${h.url}/v1/responses`, openaiHeaders(), {
      model: "chat-text",
      input: "x",
      previous_response_id: unkept.id,
    });
    assert.equal((await error(chained, 400)).code, "previous_response_not_found");
    assert.equal(h.logs.find((l) => l.endpoint === "responses")!.stored, "off");

    const mine = await create(h, { model: "chat-text", input: "secret plan" });
    await error(await get(h, mine.id, HASHED_KEY), 404);
    await error(await get(h, `${mine.id}/input_items`, HASHED_KEY), 404);
    await error(await get(h, mine.id, HASHED_KEY, "DELETE"), 404);
    const theirs = await post(`${h.url}/v1/responses`, openaiHeaders(HASHED_KEY), {
      model: "chat-text",
      input: "x",
      previous_response_id: mine.id,
    });
    assert.equal((await error(theirs, 400)).code, "previous_response_not_found");
    assert.equal(await statusOf(get(h, mine.id)), 200, "still there for its own key");
  } finally {
    await h.close();
  }
});

Deno.test("store: a response over max_item_mb is answered, not kept, and logged so", async () => {
  const h = await startHarness({
    tweak: (c) => Object.assign(c.response_store, { max_item_mb: 0.0005 }),
  });
  try {
    const big = await create(h, { model: "msg-text", input: "x".repeat(2000) });
    await error(await get(h, big.id), 404);
    assert.equal(h.logs.at(-2)!.stored, "too_large");
  } finally {
    await h.close();
  }
});

Deno.test("store: the embedded store evicts the oldest by size, and expires by age", () => {
  let now = 0;
  const store = new MemoryStore(
    { max_mb: 3000 / 1024 / 1024, max_mb_per_key: 3000 / 1024 / 1024, max_item_mb: 1, ttl_s: 10 },
    () => now,
  );
  const rec = (id: string, owner = "a"): StoredTurn => ({
    id,
    owner,
    input: [{ text: "y".repeat(800) }],
    response: { id },
  });
  const has = async (id: string) => (await store.get(id, "a")) !== undefined;
  return (async () => {
    assert.equal(await store.put(rec("resp_1")), "kept");
    assert.equal(await store.put(rec("resp_2")), "kept");
    assert.equal(await store.put(rec("resp_3")), "kept");
    assert.equal(await store.put(rec("resp_4")), "kept");
    assert.ok(store.bytes <= 3000);
    assert.deepEqual(
      await Promise.all(["resp_1", "resp_2", "resp_3", "resp_4"].map(has)),
      [false, true, true, true],
    );
    assert.equal(await store.put(rec("resp_4", "b")), "taken", "another key's id is not replaced");
    assert.equal(await store.get("resp_4", "b"), undefined);
    now = 9_999;
    assert.ok(await has("resp_4"));
    now = 10_001;
    assert.equal(await has("resp_2"), false, "expired");
    assert.equal(await store.put(rec("resp_5")), "kept");
    assert.ok(store.bytes < 2000, "expired entries freed");
    assert.equal(await store.delete("resp_5", "b"), false);
    assert.equal(await store.delete("resp_5", "a"), true);
    assert.equal(store.bytes, 0);
  })();
});

Deno.test("store: WebSocket responses are kept and chain on HTTP ones (and back)", async () => {
  const h = await startHarness();
  try {
    const http = await create(h, { model: "msg-text", input: "The code is 4711." });
    const [turn, warm, next] = await wsExchange(h.url, [
      { type: "response.create", model: "msg-text", input: "Code?", previous_response_id: http.id },
      { type: "response.create", model: "msg-text", input: [], store: false, generate: false },
      (done: Json[][]) => ({
        type: "response.create",
        model: "msg-text",
        input: "again",
        previous_response_id: lastResponseId(done as never),
        store: false,
      }),
    ]);
    const turnResponse = turn.at(-1)!.response as Json;
    assert.equal(turnResponse.previous_response_id, http.id);
    assert.match(JSON.stringify(h.upstream.requests.at(-2)!.body), /The code is 4711/);
    assert.equal(warm.at(-1)!.type, "response.completed");
    assert.equal(next.at(-1)!.type, "response.completed", "chains on the socket's warm-up");
    assert.equal(await statusOf(get(h, String(turnResponse.id))), 200);
    const chained = await create(h, {
      model: "gem-text",
      input: "over HTTP",
      previous_response_id: turnResponse.id,
    });
    assert.match(h.upstream.requests.at(-1)!.body, /The code is 4711/);
    assert.equal(chained.previous_response_id, turnResponse.id);
  } finally {
    await h.close();
  }
});

Deno.test("store: a Responses provider without passthrough relays what it need not keep", async () => {
  const h = await startHarness();
  try {
    const relayed = await create(h, { model: "resp-text", input: "hi", store: false });
    const hosted = await create(h, {
      model: "resp-text",
      input: "hi",
      tools: [{ type: "web_search" }],
    });
    const kept = await create(h, { model: "resp-text", input: "hi" });
    const lines = h.logs.filter((l) => l.endpoint === "responses");
    assert.deepEqual(lines.map((l) => [l.passthrough, l.stored]), [
      [true, "relayed"],
      [true, "relayed"],
      [false, "kept"],
    ]);
    // Relayed bodies are the provider's own: its id, not kept here.
    await error(await get(h, relayed.id), 404);
    await error(await get(h, hosted.id), 404);
    assert.equal(await statusOf(get(h, kept.id)), 200);
    const sent = JSON.parse(h.upstream.requests.at(-1)!.body);
    assert.equal(sent.previous_response_id, undefined);
  } finally {
    await h.close();
  }
});

Deno.test("store: small limits over HTTP: the oldest goes first, and responses expire", async () => {
  const h = await startHarness({
    // One key may fill the whole store here: the share per key is tests/identity_test.ts's.
    tweak: (c) =>
      Object.assign(c.response_store, {
        max_mb: 5_000 / 1024 / 1024,
        max_mb_per_key: 5_000 / 1024 / 1024,
        ttl_s: 1,
      }),
  });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push((await create(h, { model: "chat-text", input: `turn ${i}` })).id);
    }
    const kept = [];
    for (const id of ids) kept.push(await statusOf(get(h, id)));
    assert.equal(kept.at(-1), 200, "the newest is kept");
    assert.equal(kept[0], 404, "the oldest was evicted");
    // Evicted ones are a prefix: oldest first.
    assert.deepEqual(kept, [...kept].sort((a, b) => b - a));
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal(await statusOf(get(h, ids.at(-1)!)), 404, "expired after ttl_s");
  } finally {
    await h.close();
  }
});

const CHAINING_REFUSED = "previous_response_id requires a client1 passthrough route";

/** A `previous_response_id` request refused with the interface's fixed text. */
async function assertChainingRefused(h: Harness, model: string, previous: string) {
  const res = await post(`${h.url}/v1/responses`, openaiHeaders(), {
    model,
    input: "x",
    previous_response_id: previous,
  });
  const e = await error(res, 400);
  assert.equal(e.message, CHAINING_REFUSED);
  assert.equal(e.param, "previous_response_id");
}

/** The `response.completed` event's response of a streamed request. */
async function streamedResponse(h: Harness, body: Json): Promise<Json> {
  const res = await post(`${h.url}/v1/responses`, openaiHeaders(), { ...body, stream: true });
  const events = (await res.text()).split("\n").filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)));
  return events.find((e) => e.type === "response.completed").response;
}

Deno.test("store: response_store.enabled: false keeps nothing, and refuses chaining with the interface's text", async () => {
  const h = await startHarness({
    tweak: (c) => Object.assign(c.response_store, { enabled: false }),
  });
  try {
    for (const model of ["msg-text", "chat-text", "gem-text"]) {
      const json = await create(h, { model, input: "hi" });
      assert.equal(json.store, false, model);
      await error(await get(h, json.id), 404);
      const streamed = await streamedResponse(h, { model, input: "hi" });
      assert.equal(streamed.store, false, model);
      await error(await get(h, String(streamed.id)), 404);
      await assertChainingRefused(h, model, String(json.id));
    }
    assert.ok(
      h.logs.filter((l) => l.endpoint === "responses" && l.status === 200).every((l) =>
        l.stored === "off"
      ),
    );
    // A Responses provider without passthrough: converted, so the provider keeps nothing either.
    const resp = await create(h, { model: "resp-text", input: "hi" });
    assert.equal(resp.store, false);
    const sent = h.upstream.requests.findLast((r) => r.path === "/v1/responses")!;
    assert.equal(sent.json.store, false);
    await assertChainingRefused(h, "resp-text", String(resp.id));
    // A passthrough route's provider keeps its own state: chaining relays as before.
    await post(`${h.url}/v1/responses`, openaiHeaders(), {
      model: "pt-text",
      input: "x",
      previous_response_id: "resp_upstream1",
    }).then((r) => r.body?.cancel());
    const relayed = h.upstream.requests.at(-1)!;
    assert.equal(relayed.json.previous_response_id, "resp_upstream1");
  } finally {
    await h.close();
  }
});

Deno.test("store: a route with store: false keeps nothing; other routes still do; its WebSocket chains on the socket only", async () => {
  const h = await startHarness({
    extraRoutes: [{ models: ["zr-*"], provider: "anthropic", passthrough: false, store: false }],
  });
  try {
    const unkept = await create(h, { model: "zr-text", input: "hi" });
    assert.equal(unkept.store, false);
    await error(await get(h, unkept.id), 404);
    await assertChainingRefused(h, "zr-text", unkept.id as string);
    const kept = await create(h, { model: "msg-text", input: "hi" });
    assert.equal(kept.store, true);
    assert.equal(await statusOf(get(h, kept.id)), 200);
    // Chaining a stored response onto the zero-retention route is refused too.
    await assertChainingRefused(h, "zr-text", kept.id as string);
    const compact = (model: string) =>
      post(`${h.url}/v1/responses/compact`, openaiHeaders(), {
        model,
        input: "compact it",
        previous_response_id: kept.id,
      });
    assert.equal((await error(await compact("zr-text"), 400)).message, CHAINING_REFUSED);
    // Where responses are kept, compact expands the chain: its user messages come first.
    const compacted = await (await compact("msg-text")).json();
    assert.deepEqual(
      compacted.output.map((i: Json) => i.type === "message" ? i.content : i.type),
      [
        [{ type: "input_text", text: "hi" }],
        [{ type: "input_text", text: "compact it" }],
        "compaction",
      ],
    );

    const [first, onSocket, stored] = await wsExchange(h.url, [
      { type: "response.create", model: "zr-text", input: "one" },
      (done: Json[][]) => ({
        type: "response.create",
        model: "zr-text",
        input: "two",
        previous_response_id: lastResponseId(done as never),
      }),
      { type: "response.create", model: "zr-text", input: "three", previous_response_id: kept.id },
    ]);
    assert.equal((first.at(-1)!.response as Json).store, false);
    assert.equal(onSocket.at(-1)!.type, "response.completed", "chains on the socket's memory");
    assert.match(JSON.stringify(h.upstream.requests.at(-1)!.json.messages), /one.*two/s);
    await error(await get(h, String((onSocket.at(-1)!.response as Json).id)), 404);
    assert.equal(stored.at(-1)!.type, "error");
    assert.equal((stored.at(-1)!.error as Json).message, CHAINING_REFUSED);
    assert.equal((stored.at(-1)!.error as Json).param, "previous_response_id");
  } finally {
    await h.close();
  }
});

Deno.test("store: store: false or compact: false on a passthrough route is a config error", async () => {
  const config = await mockConfig("http://127.0.0.1:9");
  for (const off of [{ store: false }, { compact: false }]) {
    assert.throws(
      () =>
        validateConfig({
          ...config,
          routes: [{ models: ["pt-*"], provider: "oai", passthrough: true, ...off }],
        }),
      /routes\[0\]\.passthrough: store: false and compact: false apply to converted routes/,
    );
  }
});

Deno.test("store: a stored answer is read back as the text it was kept as, its input unparsed", async () => {
  const cfg = { max_mb: 1, max_mb_per_key: 1, max_item_mb: 1, ttl_s: 60 };
  const memory = new MemoryStore(cfg);
  const shared = new SharedStores({ ...cfg, enabled: true } as ResponseStoreConfig);
  const threaded = new SharedConversationStore((store, op, args) =>
    shared.answer({ t: "call", id: 0, store, op, args })
  );
  // An answer line no parse and re-serialisation gives back (`1.0e2`, spaces), then an input line
  // that is not JSON at all: the answer comes back as kept, and only a read of the whole record
  // (which needs the input) finds the record unreadable.
  const who = JSON.stringify({ id: "resp_1", owner: "a" });
  const answer = '{"id":"resp_1", "n":1.0e2,"output":[]}';
  const text = `${who}\n${answer}\n[not json`;
  for (
    const [name, store, put] of [
      ["memory", memory, () => memory.putText("resp_1", "a", text)],
      ["workers", threaded, () =>
        shared.answer({
          t: "call",
          id: 0,
          store: "conversations",
          op: "put",
          args: ["resp_1", "a", text],
        })],
    ] as const
  ) {
    assert.equal(await put(), "kept", name);
    assert.equal(await store.answer("resp_1", "a"), answer, `${name}: byte for byte`);
    assert.equal(await store.answer("resp_1", "b"), undefined, `${name}: another key's`);
    assert.equal(await store.get("resp_1", "a"), undefined, `${name}: the whole record`);
  }
  // A record kept whole is read whole, and its answer is the text the client was sent.
  const record: StoredTurn = {
    id: "resp_2",
    owner: "a",
    input: [{ text: "hi" }],
    response: {
      id: "resp_2",
      output_text: "hé \u2028 \ud83d\ude00",
    },
  };
  for (const store of [memory, threaded]) {
    assert.equal(await store.put(record), "kept");
    assert.deepEqual(await store.get("resp_2", "a"), record);
    assert.equal(await store.answer("resp_2", "a"), JSON.stringify(record.response));
  }
});

Deno.test("store: GET of a stored response or interaction sends the answer's bytes as the client got them", async () => {
  const h = await startHarness();
  try {
    for (
      const [path, body] of [
        ["/v1/responses", { model: "msg-text", input: "x".repeat(10_000) }],
        ["/v1beta/interactions", { model: "msg-text", input: "y".repeat(10_000) }],
      ] as const
    ) {
      const headers = path.startsWith("/v1beta") ? googleHeaders() : openaiHeaders();
      const created = await post(h.url + path, headers, body);
      const sent = await created.text();
      assert.equal(created.status, 200, sent);
      const res = await fetch(`${h.url}${path}/${JSON.parse(sent).id}`, { headers });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.equal(await res.text(), sent, path);
    }
  } finally {
    await h.close();
  }
});
