/**
 * The relay rules on converted routes (client format ≠ provider API): interruptions, provider
 * errors in the client's dialect, client disconnects, and the Responses WebSocket's own state.
 */
import assert from "node:assert/strict";
import { validateConfig } from "../src/config/config.ts";
import { setAccessLogSink } from "../src/ops/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import {
  assertDisconnectAborts,
  bodies,
  cutShort,
  envelopeMessage,
  FORMATS,
  type Harness,
  INGRESS,
  KEY,
  lastResponseId,
  MOCK_PROVIDERS,
  openaiHeaders,
  post,
  startHarness,
  type WsEvent,
  wsExchange,
} from "./helpers.ts";

/** Every (client format, foreign provider) pair, with a model for the given scenario. */
function pairs(scenario: string) {
  return INGRESS.flatMap((c) =>
    MOCK_PROVIDERS.filter((p) => p.api !== c.name)
      .map(({ api, prefix }) => ({ c, api, model: `${prefix}-${scenario}` }))
  );
}

const send = (h: Harness, c: (typeof INGRESS)[number], model: string, stream: boolean) =>
  post(h.url + c.path(model, stream), c.headers, c.body(model, stream));

Deno.test("converted: a cut stream ends with the client dialect's interruption", async (t) => {
  const h = await startHarness();
  try {
    for (const { c, api, model } of pairs("cut")) {
      await t.step(`${c.name} ← ${api}`, async () => {
        const bytes = await (await send(h, c, model, true)).bytes();
        const text = new TextDecoder().decode(bytes);
        assert.ok(cutShort(c, bytes), text);
        assert.doesNotMatch(
          text,
          /message_stop|messageStop|response\.completed|finishReason|interaction\.completed/,
        );
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("converted: provider errors keep their status, in the client's dialect", async (t) => {
  const h = await startHarness();
  try {
    for (const { c, api, model } of pairs("err429")) {
      await t.step(`${c.name} ← ${api} 429`, async () => {
        const res = await send(h, c, model, false);
        assert.equal(res.status, 429);
        envelopeMessage(c, await res.json(), "rate_limit");
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

Deno.test("demo: each response on one WebSocket has its own id", async () => {
  const h = await startHarness();
  try {
    const turn = (done: WsEvent[][]) => ({
      type: "response.create",
      model: "demo-1",
      input: "hi",
      previous_response_id: lastResponseId(done),
    });
    const done = await wsExchange(h.url, [
      { type: "response.create", model: "demo-1", input: [], generate: false },
      turn,
      turn,
    ]);
    assert.deepEqual(done.map((r) => r.at(-1)!.type), Array(3).fill("response.completed"));
    const ids = done.map((_, i) => lastResponseId(done.slice(0, i + 1)));
    assert.equal(new Set(ids).size, 3, `ids: ${ids}`);
  } finally {
    await h.close();
  }
});

Deno.test("WebSocket: a malformed frame's error names the problem, never quotes the frame", async () => {
  const h = await startHarness();
  try {
    const ws = new WebSocket(h.url.replace(/^http/, "ws") + "/v1/responses", {
      headers: { authorization: `Bearer ${KEY}` },
    });
    const reply = Promise.withResolvers<string>();
    const closed = Promise.withResolvers<void>();
    ws.onopen = () => ws.send('{"type":"response.create","input":my secret prompt}');
    ws.onmessage = (e) => {
      reply.resolve(e.data);
      ws.close();
    };
    ws.onclose = () => closed.resolve();
    const text = await reply.promise;
    await closed.promise;
    assert.match(text, /frame is not valid JSON/);
    assert.doesNotMatch(text, /secret/);
  } finally {
    await h.close();
  }
});

Deno.test("converted: the Responses WebSocket chains turns onto its own last response", async () => {
  const h = await startHarness();
  try {
    const [warm, turn, again, stale] = await wsExchange(h.url, [
      { type: "response.create", model: "msg-text", input: [], generate: false, store: false },
      (done: WsEvent[][]) => ({
        type: "response.create",
        model: "msg-text",
        input: [{ type: "message", role: "user", content: "hello over ws" }],
        previous_response_id: lastResponseId(done),
        store: false,
      }),
      (done: WsEvent[][]) => ({
        type: "response.create",
        model: "msg-text",
        input: [{ type: "message", role: "user", content: "and again" }],
        previous_response_id: lastResponseId(done),
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
    assert.match(JSON.stringify(again.at(-1)), /Hello from messages mock: and again/);
    // The warm-up never reached the provider; each turn did, as Anthropic messages, the second
    // with the first turn's input and output expanded from the socket's own last response.
    const calls = h.upstream.requests.filter((r) => r.path === "/v1/messages");
    assert.equal(calls.length, 2);
    const history = calls[1].json.messages.map((m: { role: string }) => m.role);
    assert.deepEqual(history, ["user", "assistant", "user"]);
    assert.match(
      JSON.stringify(calls[1].json.messages[1]),
      /Hello from messages mock: hello over ws/,
    );
  } finally {
    await h.close();
  }
});

Deno.test("converted: a WebSocket continuation that fails evicts the response it continued", async () => {
  const h = await startHarness();
  try {
    let called = "";
    const [call, failed, after] = await wsExchange(h.url, [
      { type: "response.create", model: "msg-tool", input: "weather?", store: false },
      (done: WsEvent[][]) => {
        called = lastResponseId(done);
        // The provider refuses the turn (as it does a function_call_output matching no call).
        return {
          type: "response.create",
          model: "msg-err400",
          input: [{ type: "function_call_output", call_id: "call_nomatch", output: "x" }],
          previous_response_id: called,
          store: false,
        };
      },
      () => ({
        type: "response.create",
        model: "msg-text",
        input: "again",
        previous_response_id: called,
        store: false,
      }),
    ]);
    assert.equal(call.at(-1)!.type, "response.completed");
    assert.equal(failed.at(-1)!.type, "error");
    assert.equal(failed.at(-1)!.status, 400);
    assert.equal(after.at(-1)!.type, "error");
    assert.equal((after.at(-1)!.error as { code: string }).code, "previous_response_not_found");
    assert.equal(h.upstream.requests.filter((r) => r.path === "/v1/messages").length, 2);
  } finally {
    await h.close();
  }
});

Deno.test("converted: sampling hints the target lacks are dropped and reported", async () => {
  const h = await startHarness();
  try {
    const gemini = INGRESS.find((c) => c.name === "generate-content")!;
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

Deno.test("timeouts: a silent provider gets a 504 in the client's dialect", async (t) => {
  const h = await startHarness({ timeouts: { first_byte_ms: 200, idle_ms: 200 } });
  // A provider that accepts the connection and never answers.
  const silent = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) =>
      new Promise<Response>((resolve) =>
        req.signal.addEventListener("abort", () => resolve(new Response(null)))
      ),
  );
  const gw = await createGateway(
    validateConfig({
      keys: [{ name: "t", key: KEY }],
      providers: [{
        name: "silent",
        api: "messages",
        base_url: `http://127.0.0.1:${silent.addr.port}`,
        timeouts: { first_byte_ms: 200 },
      }],
      routes: [{ models: ["*"], provider: "silent" }],
    }),
    FORMATS,
  );
  const previous = setAccessLogSink(() => {});
  try {
    await t.step("no response headers", async () => {
      const res = await createHandler(gw)(
        new Request("http://gw/v1/chat/completions", {
          method: "POST",
          headers: openaiHeaders(),
          body: JSON.stringify(bodies.chat("any")),
        }),
      );
      assert.equal(res.status, 504);
      assert.match((await res.json()).error.message, /sent no response headers within 200 ms/);
    });
    await t.step("a body that goes idle", async () => {
      for (const model of ["chat-stall", "msg-stall"]) {
        const chat = INGRESS.find((c) => c.name === "chat")!;
        const res = await send(h, chat, model, false);
        assert.equal(res.status, 504, model);
        assert.match((await res.json()).error.message, /went idle within 200 ms/);
      }
    });
  } finally {
    setAccessLogSink(previous);
    await silent.shutdown();
    await h.close();
  }
});

Deno.test("Gemini JSON-array streams end in-array, also when interrupted", async (t) => {
  const h = await startHarness();
  const gemini = INGRESS.find((c) => c.name === "generate-content")!;
  const array = (model: string) =>
    post(`${h.url}/v1beta/models/${model}:streamGenerateContent`, gemini.headers, bodies.gemini());
  try {
    for (const model of ["gem-text", "chat-text", "msg-text"]) {
      await t.step(`${model}: complete`, async () => {
        const body = JSON.parse(await (await array(model)).text());
        assert.ok(Array.isArray(body) && body.length > 1);
        assert.ok(body.at(-1).candidates[0].finishReason);
      });
    }
    for (const model of ["gem-cut", "chat-cut", "msg-cut"]) {
      await t.step(`${model}: interrupted`, async () => {
        const res = await array(model);
        assert.match(res.headers.get("content-type") ?? "", /application\/json/);
        const body = JSON.parse(await res.text());
        assert.equal(body.at(-1).error.type, "upstream_interrupted");
        assert.equal(body.at(-1).error.code, 502);
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("converted: a Responses warm-up (generate: false) is answered without the provider", async () => {
  const h = await startHarness();
  try {
    for (const stream of [false, true]) {
      const res = await post(`${h.url}/v1/responses`, openaiHeaders(), {
        model: "msg-text",
        input: [],
        generate: false,
        stream,
      });
      assert.equal(res.status, 200);
      const text = await res.text();
      if (stream) {
        assert.match(text, /^event: response.created\n/);
        assert.match(text, /event: response.completed\n/);
      } else {
        const body = JSON.parse(text);
        assert.equal(body.status, "completed");
        assert.deepEqual(body.output, []);
      }
    }
    assert.equal(h.upstream.requests.length, 0);
  } finally {
    await h.close();
  }
});

Deno.test("converted: Codex in-band compaction over the WebSocket, then its replay", async () => {
  const h = await startHarness();
  try {
    const history = [{ type: "message", role: "user", content: "remember the word tangerine" }];
    const [compacted] = await wsExchange(h.url, [{
      type: "response.create",
      model: "msg-text",
      input: [...history, { type: "compaction_trigger" }],
      store: false,
    }]);
    const done = compacted.at(-1)! as { type: string; response: { output: WsEvent[] } };
    assert.equal(done.type, "response.completed");
    assert.equal(done.response.output.length, 1, "exactly one output item");
    const item = done.response.output[0] as { type: string; encrypted_content: string };
    assert.equal(item.type, "compaction");
    assert.match(item.encrypted_content, /^gwcmp1:/);
    // The provider was asked for a summary of the history, with no tools to call.
    assert.match(h.upstream.requests.at(-1)!.body, /tangerine/);

    const [next] = await wsExchange(h.url, [{
      type: "response.create",
      model: "msg-text",
      input: [item, { type: "message", role: "user", content: "what was the word?" }],
      store: false,
    }]);
    assert.equal(next.at(-1)!.type, "response.completed");
    const sent = h.upstream.requests.at(-1)!.json.messages;
    assert.match(JSON.stringify(sent[0]), /Summary of the earlier conversation/);
    // The summary is the mock's reply to the compaction request, carried back verbatim.
    assert.match(JSON.stringify(sent[0]), /Hello from messages mock/);
  } finally {
    await h.close();
  }
});

Deno.test("converted: Anthropic's required max_tokens defaults per route, then per provider", async () => {
  const h = await startHarness({
    extraRoutes: [{
      models: ["capped-*"],
      provider: "anthropic",
      model: "msg-text",
      default_max_tokens: 123,
      passthrough: false,
    }],
  });
  try {
    for (const [model, expected] of [["capped-x", 123], ["msg-text", 8192]] as const) {
      const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat(model));
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.equal(h.upstream.requests.at(-1)!.json.max_tokens, expected, model);
    }
  } finally {
    await h.close();
  }
});
