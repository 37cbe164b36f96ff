/**
 * The relay rules on converted routes (client format ≠ provider API): interruptions, provider
 * errors in the client's dialect, client disconnects, and the Responses WebSocket's own state.
 */
import assert from "node:assert/strict";
import {
  assertDisconnectAborts,
  bodies,
  type Harness,
  INGRESS,
  lastResponseId,
  post,
  startHarness,
  type WsEvent,
  wsExchange,
} from "./helpers.ts";

/** Model prefixes of the routes to each provider API. */
const PROVIDERS = { chat: "chat", responses: "resp", messages: "msg", gemini: "gem" } as const;

/** Every (client format, foreign provider) pair, with a model for the given scenario. */
function pairs(scenario: string) {
  return INGRESS.flatMap((c) =>
    Object.entries(PROVIDERS)
      .filter(([api]) => api !== c.name)
      .map(([api, prefix]) => ({ c, api, model: `${prefix}-${scenario}` }))
  );
}

const send = (h: Harness, c: (typeof INGRESS)[number], model: string, stream: boolean) =>
  post(h.url + c.path(model, stream), c.headers, c.body(model, stream));

Deno.test("converted: a cut stream ends with upstream_interrupted + [DONE]", async (t) => {
  const h = await startHarness();
  try {
    for (const { c, api, model } of pairs("cut")) {
      await t.step(`${c.name} ← ${api}`, async () => {
        const text = await (await send(h, c, model, true)).text();
        const lines = text.trimEnd().split(/\r?\n/).filter(Boolean);
        assert.equal(lines.at(-1), "data: [DONE]");
        const data = JSON.parse(lines.at(-2)!.replace(/^data: /, ""));
        assert.equal(data.type, "upstream_interrupted");
        assert.equal(data.error.type, "upstream_interrupted");
        assert.doesNotMatch(text, /message_stop|response\.completed|finishReason/);
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("converted: provider errors keep their status, in the client's dialect", async (t) => {
  const h = await startHarness();
  type Body = { type?: string; error: { type?: string; status?: string } };
  const shapes: Record<string, (b: Body) => unknown> = {
    chat: (b) => b.error.type,
    responses: (b) => b.error.type,
    messages: (b) => b.type === "error" && b.error.type,
    gemini: (b) => b.error.status,
  };
  try {
    for (const { c, api, model } of pairs("err429")) {
      await t.step(`${c.name} ← ${api} 429`, async () => {
        const res = await send(h, c, model, false);
        assert.equal(res.status, 429);
        const body = await res.json();
        assert.ok(shapes[c.name](body), JSON.stringify(body));
        if (c.name === "gemini") assert.equal(body.error.status, "RESOURCE_EXHAUSTED");
        if (c.name === "messages") assert.equal(body.error.type, "rate_limit_error");
      });
    }
    await t.step("Anthropic 529 becomes 503 for OpenAI and Google clients", async () => {
      for (const c of INGRESS.filter((c) => c.name !== "messages")) {
        const res = await send(h, c, "msg-err529", false);
        assert.equal(res.status, 503, c.name);
        await res.body?.cancel();
      }
    });
  } finally {
    await h.close();
  }
});

Deno.test("converted: client disconnect aborts the upstream request", async () => {
  const h = await startHarness();
  try {
    for (const { c, api, model } of pairs("slow")) {
      await assertDisconnectAborts(h, c, model, `${c.name} ← ${api}`);
    }
  } finally {
    await h.close();
  }
});

Deno.test("converted: the Responses WebSocket chains turns onto its own last response", async () => {
  const h = await startHarness();
  try {
    const [warm, turn, stale] = await wsExchange(h.url, [
      { type: "response.create", model: "msg-text", input: [], generate: false, store: false },
      (done: WsEvent[][]) => ({
        type: "response.create",
        model: "msg-text",
        input: [{ type: "message", role: "user", content: "hello over ws" }],
        previous_response_id: lastResponseId(done),
        store: false,
      }),
      { type: "response.create", model: "msg-text", input: "x", previous_response_id: "resp_x" },
    ]);
    assert.deepEqual(warm.map((e) => e.type), [
      "response.created",
      "response.in_progress",
      "response.completed",
    ]);
    assert.equal(turn.at(-1)!.type, "response.completed");
    assert.match(JSON.stringify(turn.at(-1)), /Hello from messages mock: hello over ws/);
    assert.equal(stale.at(-1)!.type, "error");
    assert.equal((stale.at(-1)!.error as { code: string }).code, "previous_response_not_found");
    // The warm-up never reached the provider; the turn did, once, as Anthropic messages.
    const calls = h.upstream.requests.filter((r) => r.path === "/v1/messages");
    assert.equal(calls.length, 1);
  } finally {
    await h.close();
  }
});

Deno.test("converted: sampling hints the target lacks are dropped and reported", async () => {
  const h = await startHarness();
  try {
    const gemini = INGRESS.find((c) => c.name === "gemini")!;
    const res = await post(h.url + gemini.path("chat-text", false), gemini.headers, {
      ...bodies.gemini(),
      generationConfig: { temperature: 1, topP: 0.95, topK: 64 },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-gateway-dropped-params"), "top_k");
    await res.body?.cancel();
    const sent = JSON.parse(h.upstream.requests.at(-1)!.body);
    assert.equal(sent.top_k, undefined);
    assert.equal(sent.top_p, 0.95);
  } finally {
    await h.close();
  }
});
