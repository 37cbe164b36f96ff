/** POST /v1beta/interactions on converted routes: answers, streams and the 400s it owes. */
import assert from "node:assert/strict";
import { googleHeaders, KEY, post, startHarness } from "./helpers.ts";

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
    ];
    for (const [body, field] of cases) {
      const res = await post(h.url + URL_PATH, googleHeaders(), body);
      assert.equal(res.status, 400, field);
      const err = (await res.json()).error;
      assert.equal(err.status, "INVALID_ARGUMENT");
      assert.match(err.message, new RegExp(field));
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
