/** POST /v1beta/interactions on converted routes: answers, streams and the 400s it owes. */
import assert from "node:assert/strict";
import { googleHeaders, KEY, openaiHeaders, post, PROVIDER_KEY, startHarness } from "./helpers.ts";

const URL_PATH = "/v1beta/interactions";

Deno.test("interactions: JSON and SSE through a converted route", async () => {
  const h = await startHarness();
  try {
    const res = await post(h.url + URL_PATH, googleHeaders(), { model: "msg-text", input: "hi" });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.status, "completed");
    assert.ok(Array.isArray(body.steps) && body.steps.length > 0);
    const sse = await post(h.url + URL_PATH, googleHeaders(), {
      model: "gem-text",
      input: "hi",
      stream: true,
    });
    assert.equal(sse.status, 200);
    assert.match(sse.headers.get("content-type") ?? "", /text\/event-stream/);
    const text = await sse.text();
    assert.match(text, /"event_type":"interaction.created"/);
    assert.match(text, /"event_type":"interaction.completed"/);
  } finally {
    await h.close();
  }
});

Deno.test("interactions: background, agent and a ?key= key are refused in Google's envelope", async () => {
  const h = await startHarness();
  try {
    const cases: [Record<string, unknown>, string][] = [
      [{ model: "gem-text", input: "hi", background: true }, "background"],
      [{ agent: "gem-agent", input: "hi" }, "agent"],
      // An agent of Google's that no route names: still the 400 naming `agent`, not a 404.
      [{ agent: "deep-research-pro-preview-12-2025", input: "hi" }, "agent"],
    ];
    for (const [body, field] of cases) {
      const res = await post(h.url + URL_PATH, googleHeaders(), body);
      assert.equal(res.status, 400, field);
      const err = (await res.json()).error;
      assert.equal(err.status, "INVALID_ARGUMENT");
      assert.match(err.message, new RegExp(`^${field}: `));
    }
    const res = await fetch(`${h.url}${URL_PATH}?key=${KEY}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gem-text", input: "hi" }),
    });
    // Refused like generateContent's ?key=; the key itself is never echoed.
    assert.ok(res.status === 400 || res.status === 401, String(res.status));
    const text = await res.text();
    assert.ok(!text.includes(KEY));
    assert.match(JSON.parse(text).error.status, /INVALID_ARGUMENT|UNAUTHENTICATED/);
  } finally {
    await h.close();
  }
});

Deno.test("interactions upstream: an Interactions client is relayed, others convert to it", async () => {
  const h = await startHarness();
  try {
    const relayed = await post(h.url + URL_PATH, googleHeaders(), {
      model: "int-text",
      input: "hi",
    });
    assert.equal(relayed.status, 200);
    const body = await relayed.json();
    // Relayed as Google answered: its input step first (the converting encoder writes none).
    assert.match(body.id, /^v1_/);
    assert.deepEqual(body.steps.map((s: { type: string }) => s.type), [
      "user_input",
      "model_output",
    ]);
    const chat = await post(h.url + "/v1/chat/completions", openaiHeaders(), {
      model: "int-text",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(chat.status, 200);
    const completion = await chat.json();
    assert.equal(completion.object, "chat.completion");
    assert.equal(typeof completion.choices[0].message.content, "string");
    const upstream = h.upstream.requests.filter((r) => r.path === URL_PATH);
    assert.equal(upstream.length, 2);
    assert.ok(upstream.every((r) => r.headers["x-goog-api-key"] === PROVIDER_KEY));
  } finally {
    await h.close();
  }
});

Deno.test("interactions upstream: chains stay with Google; the gateway reads only its own ids", async () => {
  const h = await startHarness();
  try {
    const first = await (await post(h.url + URL_PATH, googleHeaders(), {
      model: "int-text",
      input: "hi",
    })).json();
    const chained = await post(h.url + URL_PATH, googleHeaders(), {
      model: "int-text",
      input: "again",
      previous_interaction_id: first.id,
    });
    assert.equal(chained.status, 200);
    await chained.body?.cancel();
    // Relayed as sent: Google resolves its own chain.
    const sent = JSON.parse(h.upstream.requests.at(-1)!.body);
    assert.equal(sent.previous_interaction_id, first.id);
    assert.equal(sent.input, "again");
    const got = await fetch(`${h.url}${URL_PATH}/${first.id}`, { headers: googleHeaders() });
    assert.equal(got.status, 404);
    const err = (await got.json()).error;
    assert.equal(err.status, "NOT_FOUND");
    assert.match(err.message, /this one was not kept here \(store: false, or made by a provider\)/);
  } finally {
    await h.close();
  }
});
