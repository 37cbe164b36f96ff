/** Auth, dialect envelopes and the product spec's fixed rules, over real HTTP. */
import assert from "node:assert/strict";
import {
  anthropicHeaders,
  bodies,
  googleHeaders,
  HASHED_KEY,
  KEY,
  openaiHeaders,
  post,
  PROVIDER_KEY,
  startHarness,
} from "./helpers.ts";

/** Asserts an OpenAI-shaped error and returns its message. */
async function openaiError(res: Response, status: number): Promise<string> {
  assert.equal(res.status, status);
  const body = await res.json();
  assert.equal(typeof body.error.message, "string");
  assert.equal(typeof body.error.type, "string");
  assert.ok("param" in body.error && "code" in body.error, JSON.stringify(body));
  return body.error.message;
}

async function anthropicError(res: Response, status: number): Promise<string> {
  assert.equal(res.status, status);
  const body = await res.json();
  assert.equal(body.type, "error");
  assert.equal(typeof body.error.type, "string");
  return body.error.message;
}

async function googleError(res: Response, status: number): Promise<string> {
  assert.equal(res.status, status);
  const body = await res.json();
  assert.equal(body.error.code, status);
  assert.equal(typeof body.error.status, "string");
  return body.error.message;
}

Deno.test("auth: each endpoint's key header, 401 in its own dialect", async (t) => {
  const h = await startHarness();
  try {
    const chat = `${h.url}/v1/chat/completions`;
    await t.step("openai: Bearer required, wrong key 401, hashed key accepted", async () => {
      const body = bodies.chat("demo-x");
      await openaiError(await post(chat, { "content-type": "application/json" }, body), 401);
      const wrong = await post(chat, openaiHeaders("sk-wrong-key-000"), body);
      assert.equal((await wrong.json()).error.code, "invalid_api_key");
      const ok = await post(chat, openaiHeaders(), body);
      assert.equal(ok.status, 200);
      await ok.body?.cancel();
      const hashed = await post(chat, openaiHeaders(HASHED_KEY), body);
      assert.equal(hashed.status, 200);
      await hashed.body?.cancel();
      for (const path of ["/v1/responses", "/v1/responses/compact", "/v1/models"]) {
        const res = await fetch(`${h.url}${path}`, {
          method: path === "/v1/models" ? "GET" : "POST",
          body: path === "/v1/models" ? undefined : "{}",
        });
        await openaiError(res, 401);
      }
    });
    await t.step("anthropic: x-api-key or Bearer; 401 envelope", async () => {
      const url = `${h.url}/v1/messages`;
      const body = bodies.messages("demo-x");
      const missing = await post(url, { "anthropic-version": "2023-06-01" }, body);
      assert.equal((await missing.json()).error.type, "authentication_error");
      const bearer = await post(url, {
        authorization: `Bearer ${KEY}`,
        "anthropic-version": "2026-10-21",
      }, body);
      assert.equal(bearer.status, 200);
      await bearer.body?.cancel();
      const res = await post(url, anthropicHeaders("sk-nope-nope"), body);
      await anthropicError(res, 401);
      await anthropicError(await post(`${h.url}/v1/messages/count_tokens`, {}, body), 401);
    });
    await t.step("google: x-goog-api-key or x-vendor2-api-key; ?key= rejected", async () => {
      const url = `${h.url}/v1beta/models/demo-x:generateContent`;
      const body = bodies.gemini();
      assert.equal(
        (await googleError(await post(url, {}, body), 401)).includes("x-goog-api-key"),
        true,
      );
      const ok = await post(url, googleHeaders(), body);
      assert.equal(ok.status, 200);
      await ok.body?.cancel();
      const vendor2 = await post(url, { "x-vendor2-api-key": KEY }, body);
      assert.equal(vendor2.status, 200);
      await vendor2.body?.cancel();
      const query = await post(`${url}?key=${KEY}`, {}, body);
      const msg = await googleError(query, 400);
      assert.match(msg, /\?key=/);
    });
    await t.step("the access log names the key, never the key itself", () => {
      assert.ok(h.logs.some((l) => l.key === "team-a"));
      assert.ok(h.logs.some((l) => l.key === "team-b"));
      assert.ok(!JSON.stringify(h.logs).includes(KEY));
      assert.ok(!JSON.stringify(h.logs).includes("hi there"), "no prompt in logs");
    });
  } finally {
    await h.close();
  }
});

Deno.test("rules: fixed messages, verbatim", async (t) => {
  const h = await startHarness({
    extraRoutes: [{
      models: ["nocompact-*"],
      provider: "anthropic",
      passthrough: false,
      compact: false,
    }],
  });
  try {
    await t.step("background responses", async () => {
      const res = await post(`${h.url}/v1/responses`, openaiHeaders(), {
        ...bodies.responses("pt-text"),
        background: true,
      });
      assert.equal(await openaiError(res, 400), "background responses are not supported");
    });
    await t.step("previous_response_id: unknown id, bad type, malformed id", async () => {
      for (const model of ["resp-text", "msg-text", "demo-x"]) {
        const res = await post(`${h.url}/v1/responses`, openaiHeaders(), {
          ...bodies.responses(model),
          previous_response_id: "resp_123",
        });
        assert.equal(res.status, 400);
        const { error } = await res.json();
        assert.equal(error.message, "Previous response with id 'resp_123' not found.");
        assert.equal(error.code, "previous_response_not_found");
        assert.equal(error.param, "previous_response_id");
      }
      for (const bad of [42, "not-an-id"]) {
        const res = await post(`${h.url}/v1/responses`, openaiHeaders(), {
          ...bodies.responses("msg-text"),
          previous_response_id: bad,
        });
        assert.match(await openaiError(res, 400), /previous_response_id/);
      }
    });
    await t.step("compact on a converted route with compact: false", async () => {
      const res = await post(`${h.url}/v1/responses/compact`, openaiHeaders(), {
        model: "nocompact-text",
        input: [],
      });
      assert.equal(
        await openaiError(res, 400),
        "responses compact requires a client1 passthrough route",
      );
    });
    await t.step("count_tokens off a messages route", async () => {
      for (const model of ["chat-text", "gem-text", "pt-text", "demo-x"]) {
        const res = await post(`${h.url}/v1/messages/count_tokens`, anthropicHeaders(), {
          model,
          messages: [{ role: "user", content: "hi" }],
        });
        assert.equal(
          await anthropicError(res, 400),
          "messages token counting requires a family3-compatible upstream",
        );
      }
    });
    await t.step("other Gemini actions", async () => {
      for (const action of ["countTokens", "embedContent", "batchGenerateContent", ""]) {
        const path = `/v1beta/models/gem-text${action ? ":" + action : ""}`;
        const res = await post(`${h.url}${path}`, googleHeaders(), bodies.gemini());
        assert.equal(await googleError(res, 400), "unsupported vendor2 action");
      }
    });
    await t.step("Gemini model segment characters", async () => {
      for (const model of ["gem%20text", "gem$text", "gem@text"]) {
        const res = await post(
          `${h.url}/v1beta/models/${model}:generateContent`,
          googleHeaders(),
          bodies.gemini(),
        );
        assert.match(await googleError(res, 400), /only letters, digits/);
      }
    });
    await t.step("GET /v1beta/models/{id}: an unknown model is a Google 404", async () => {
      const res = await fetch(`${h.url}/v1beta/models/nope`, { headers: googleHeaders() });
      assert.match(await googleError(res, 404), /nope/);
    });
    await t.step("anthropic-version required on messages, dated values accepted", async () => {
      const url = `${h.url}/v1/messages`;
      const res = await post(url, { "x-api-key": KEY }, bodies.messages("demo-x"));
      assert.match(await anthropicError(res, 400), /anthropic-version/);
      const bad = await post(url, { "x-api-key": KEY, "anthropic-version": "latest" }, {});
      assert.match(await anthropicError(bad, 400), /anthropic-version/);
      for (const v of ["2023-06-01", "2026-10-21"]) {
        const ok = await post(
          url,
          { "x-api-key": KEY, "anthropic-version": v },
          bodies.messages("demo-x"),
        );
        assert.equal(ok.status, 200);
        await ok.body?.cancel();
      }
      const vendor3 = await post(
        url,
        { "x-api-key": KEY, "vendor3-version": "2023-06-01" },
        bodies.messages("demo-x"),
      );
      assert.equal(vendor3.status, 200);
      await vendor3.body?.cancel();
    });
  } finally {
    await h.close();
  }
});

Deno.test("rules: count_tokens on a route of several targets skips those that cannot count", async () => {
  const h = await startHarness({
    extraRoutes: [
      // A chat target first: the counting one is second.
      {
        models: ["mixed-*"],
        targets: [{ provider: "oai-chat", weight: 1 }, { provider: "anthropic", weight: 1 }],
        passthrough: false,
      },
      {
        models: ["nocount-*"],
        targets: [{ provider: "oai-chat", weight: 1 }, { provider: "gemini", weight: 1 }],
        passthrough: false,
      },
    ],
  });
  try {
    const count = (model: string) =>
      post(`${h.url}/v1/messages/count_tokens`, anthropicHeaders(), {
        model,
        messages: [{ role: "user", content: "count me" }],
      });
    const res = await count("mixed-text");
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(typeof body.input_tokens, "number");
    assert.deepEqual(h.upstream.requests.map((r) => r.path), ["/v1/messages/count_tokens"]);
    assert.equal(
      await anthropicError(await count("nocount-text"), 400),
      "messages token counting requires a family3-compatible upstream",
    );
    assert.equal(h.upstream.requests.length, 1, "nothing sent for a route that cannot count");
  } finally {
    await h.close();
  }
});

Deno.test("errors: unknown model, bad JSON, bad field types, unknown paths", async (t) => {
  const h = await startHarness();
  try {
    await t.step("unknown model → 404 in each dialect, naming what is served", async () => {
      const messages = [
        await openaiError(
          await post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat("nope")),
          404,
        ),
        await openaiError(
          await post(`${h.url}/v1/responses`, openaiHeaders(), bodies.responses("nope")),
          404,
        ),
        await anthropicError(
          await post(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("nope")),
          404,
        ),
        await googleError(
          await post(
            `${h.url}/v1beta/models/nope:generateContent`,
            googleHeaders(),
            bodies.gemini(),
          ),
          404,
        ),
      ];
      for (const m of messages) {
        assert.match(
          m,
          /model "nope" is not served .* Served: chat-\*, renamed-\*, pt-\*, resp-\*, .*demo-\*\./,
        );
        // A config file is in force: the vendor keys the built-in config reads would do nothing.
        assert.match(m, /demo-\*\. Add a route for it to the config file\.$/);
        assert.doesNotMatch(m, /_API_KEY/);
        assert.doesNotMatch(m, new RegExp(PROVIDER_KEY));
      }
    });
    await t.step("unknown model under the built-in config → the vendor keys to set", async () => {
      const gw = await startHarness({ builtInConfig: true });
      try {
        const nope = await openaiError(
          await post(`${gw.url}/v1/chat/completions`, openaiHeaders(), bodies.chat("nope")),
          404,
        );
        assert.match(nope, /set OPENAI_API_KEY \(gpt-\*, o\*, codex-\*\) or ANTHROPIC_API_KEY/);
        // A model a real provider would serve: only that provider's key is suggested.
        const claude = await anthropicError(
          await post(`${gw.url}/v1/messages`, anthropicHeaders(), bodies.messages("claude-x")),
          404,
        );
        assert.match(claude, /set ANTHROPIC_API_KEY \(claude-\*\) \(built-in config\) or add/);
        assert.doesNotMatch(claude, /OPENAI/);
      } finally {
        await gw.close();
      }
    });
    await t.step("malformed JSON → 400", async () => {
      assert.match(
        await openaiError(
          await post(`${h.url}/v1/chat/completions`, openaiHeaders(), "{nope"),
          400,
        ),
        /not valid JSON/,
      );
      assert.match(
        await anthropicError(await post(`${h.url}/v1/messages`, anthropicHeaders(), "[1,2]"), 400),
        /JSON object/,
      );
      await googleError(
        await post(`${h.url}/v1beta/models/gem-text:generateContent`, googleHeaders(), "nah"),
        400,
      );
    });
    await t.step("a bad body is never quoted back (it may hold a prompt)", async () => {
      const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), "secret prompt{");
      assert.doesNotMatch(await openaiError(res, 400), /secret/);
    });
    await t.step("bodies over 32 MiB → 413, also without content-length", async () => {
      const chunk = new Uint8Array(1024 * 1024).fill(32);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent++ < 40) c.enqueue(chunk);
          else c.close();
        },
      });
      const res = await fetch(`${h.url}/v1/chat/completions`, {
        method: "POST",
        headers: openaiHeaders(),
        body,
      });
      assert.match(await openaiError(res, 413), /exceeds/);
    });
    await t.step("wrong field types → 400 naming the field", async () => {
      const chat = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), {
        model: "chat-text",
        messages: "hello",
      });
      assert.match(await openaiError(chat, 400), /messages/);
      const stream = await post(`${h.url}/v1/responses`, openaiHeaders(), {
        model: "pt-text",
        input: "x",
        stream: "yes",
      });
      assert.match(await openaiError(stream, 400), /stream/);
      const model = await post(`${h.url}/v1/messages`, anthropicHeaders(), {
        model: 42,
        max_tokens: 1,
        messages: [],
      });
      assert.match(await anthropicError(model, 400), /model/);
      const contents = await post(
        `${h.url}/v1beta/models/gem-text:generateContent`,
        googleHeaders(),
        { contents: [{ role: "user", parts: "x" }] },
      );
      assert.match(await googleError(contents, 400), /contents\[0\]\.parts/);
    });
    await t.step("unknown path → 404 in the path's dialect; wrong method → 405", async () => {
      await openaiError(await fetch(`${h.url}/v1/nothing`), 404);
      await anthropicError(await fetch(`${h.url}/v1/messages/batches`), 404);
      await googleError(await fetch(`${h.url}/v1beta/other`), 404);
      await openaiError(await fetch(`${h.url}/v1/chat/completions`), 405);
      const head = await fetch(`${h.url}/nothing`, { method: "HEAD" });
      assert.equal(head.status, 404);
      const headPost = await fetch(`${h.url}/v1/chat/completions`, { method: "HEAD" });
      assert.equal(headPost.status, 405);
    });
    await t.step("vendor query parameters do not break routing", async () => {
      const res = await post(
        `${h.url}/v1/messages?beta=true`,
        anthropicHeaders(),
        bodies.messages("msg-text"),
      );
      assert.equal(res.status, 200);
      assert.match((await res.json()).content[0].text, /Hello from messages mock/);
    });
  } finally {
    await h.close();
  }
});

Deno.test("ops: /v1/models, /healthz, /readyz, request ids", async () => {
  const h = await startHarness();
  try {
    const models = await (await fetch(`${h.url}/v1/models`, { headers: openaiHeaders() })).json();
    assert.equal(models.object, "list");
    // Only concrete ids: the harness routes are all patterns.
    assert.ok(!models.data.some((m: { id: string }) => m.id.includes("*")));
    assert.deepEqual(await (await fetch(`${h.url}/healthz`)).json(), { status: "ok" });
    // The peer (loopback) is a trusted proxy; the client forged the left-most hop.
    const fwd = await fetch(`${h.url}/healthz`, {
      headers: { "x-forwarded-for": "198.51.100.9, 203.0.113.7" },
    });
    await fwd.body?.cancel();
    assert.equal(h.logs.at(-1)!.client_ip, "203.0.113.7", "Kong's X-Forwarded-For client");
    const direct = await fetch(`${h.url}/healthz`);
    await direct.body?.cancel();
    assert.equal(h.logs.at(-1)!.client_ip, "127.0.0.1");
    const ready = await fetch(`${h.url}/readyz`, {
      headers: { "x-kong-request-id": "kong-abc-123" },
    });
    assert.equal(ready.status, 200);
    assert.equal(ready.headers.get("x-gateway-request-id"), "kong-abc-123");
    await ready.body?.cancel();
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat("demo-x"));
    assert.match(res.headers.get("x-gateway-request-id") ?? "", /^[0-9a-f-]{36}$/);
    await res.body?.cancel();
  } finally {
    await h.close();
  }
});

Deno.test("ops: GET / and HEAD / name the service, need no key, reveal nothing else", async () => {
  const h = await startHarness();
  try {
    const get = await fetch(`${h.url}/`);
    assert.equal(get.status, 200);
    assert.equal(get.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.equal(await get.text(), "LLM gateway\n");
    // Claude Code's start-up probe: HEAD, with its key or none.
    const probes: Record<string, string>[] = [{}, anthropicHeaders(), { "x-api-key": "not-a-key" }];
    for (const headers of probes) {
      const head = await fetch(`${h.url}/`, { method: "HEAD", headers });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), "");
    }
    const post = await fetch(`${h.url}/`, { method: "POST" });
    assert.equal(post.status, 405);
    await post.body?.cancel();
  } finally {
    await h.close();
  }
});

Deno.test("credentials: the client key never goes upstream; the provider key does", async () => {
  const h = await startHarness();
  try {
    const calls = [
      post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat("chat-text")),
      post(`${h.url}/v1/responses`, openaiHeaders(), bodies.responses("pt-text")),
      post(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("msg-text")),
      post(`${h.url}/v1beta/models/gem-text:generateContent`, googleHeaders(), bodies.gemini()),
    ];
    for (const res of await Promise.all(calls)) {
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.ok(!text.includes(PROVIDER_KEY));
    }
    const at = (path: string) => h.upstream.requests.find((r) => r.path.startsWith(path))!.headers;
    assert.equal(h.upstream.requests.length, 4);
    assert.equal(at("/v1/chat/completions").authorization, `Bearer ${PROVIDER_KEY}`);
    assert.equal(at("/v1/responses").authorization, `Bearer ${PROVIDER_KEY}`);
    assert.equal(at("/v1/messages")["x-api-key"], PROVIDER_KEY);
    assert.equal(at("/v1/messages")["anthropic-version"], "2023-06-01");
    assert.equal(at("/v1beta/models/")["x-goog-api-key"], PROVIDER_KEY);
    assert.ok(!JSON.stringify(h.upstream.requests.map((r) => r.headers)).includes(KEY));
  } finally {
    await h.close();
  }
});
