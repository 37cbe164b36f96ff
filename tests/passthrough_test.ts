/** Same-format relays: bytes in, bytes out, streams included; interruptions and aborts. */
import assert from "node:assert/strict";
import {
  anthropicHeaders,
  assertDisconnectAborts,
  bodies,
  cutShort,
  envelopeMessage,
  googleHeaders,
  type Harness,
  INGRESS,
  type Ingress,
  lastResponseId,
  openaiHeaders,
  post,
  startHarness,
  type WsEvent,
  wsExchange,
} from "./helpers.ts";

const urls = (h: Harness, c: Ingress, model: string, stream: boolean) => ({
  gateway: h.url + c.path(model, stream),
  direct: h.upstream.url + c.path(model, stream),
});

/** Vendor ids and timestamps differ per call; everything else must be byte-identical. */
function normalize(text: string): string {
  return text
    .replace(/(chatcmpl-|resp_|msg_|fc_|call_|rs_|toolu_|req_|cmp_|v1_)[A-Za-z0-9_]+/g, "$1X")
    .replace(/"(created|created_at)":\s*\d+/g, '"$1":0')
    .replace(/"(created|updated)":\s*"[^"]*"/g, '"$1":"T"')
    .replace(/"responseId":\s*"[^"]*"/g, '"responseId":"X"');
}

Deno.test("passthrough: each format relays bytes unchanged, stream and not", async (t) => {
  const h = await startHarness();
  try {
    for (const c of INGRESS) {
      for (const stream of [false, true]) {
        await t.step(`${c.name} ${stream ? "stream" : "json"}`, async () => {
          const u = urls(h, c, c.model, stream);
          const via = await post(u.gateway, c.headers, c.body(c.model, stream));
          const direct = await post(u.direct, c.headers, c.body(c.model, stream));
          assert.equal(via.status, 200);
          const [a, b] = [await via.text(), await direct.text()];
          assert.equal(normalize(a), normalize(b));
          if (stream) {
            assert.equal(via.headers.get("x-accel-buffering"), "no");
            const type = c.binary ? "application/vnd.amazon.eventstream" : "text/event-stream";
            assert.match(via.headers.get("content-type") ?? "", new RegExp(type));
          }
          const sent = h.upstream.requests.at(-2)!;
          assert.equal(sent.body, JSON.stringify(c.body(c.model, stream)), "body relayed verbatim");
        });
      }
    }
    await t.step("gemini stream without alt=sse stays a JSON array", async () => {
      const res = await post(
        `${h.url}/v1beta/models/gem-text:streamGenerateContent`,
        googleHeaders(),
        bodies.gemini(),
      );
      const body = JSON.parse(await res.text());
      assert.ok(Array.isArray(body) && body.length >= 2);
      assert.equal(h.upstream.requests.at(-1)!.search, "");
    });
    await t.step("model rename and forwarded headers", async () => {
      const res = await post(`${h.url}/v1/chat/completions`, {
        ...openaiHeaders(),
        "openai-beta": "x=1",
        "x-custom-secret": "no",
      }, bodies.chat("renamed-a"));
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const sent = h.upstream.requests.at(-1)!;
      assert.equal(JSON.parse(sent.body).model, "chat-text-renamed");
      assert.equal(sent.headers["openai-beta"], "x=1");
      assert.equal(sent.headers["x-custom-secret"], undefined);
    });
    await t.step("anthropic-beta and the client's anthropic-version are forwarded", async () => {
      const res = await post(`${h.url}/v1/messages?beta=true`, {
        ...anthropicHeaders(),
        "anthropic-beta": "a-2025,b-2026",
      }, bodies.messages("msg-text"));
      await res.body?.cancel();
      const sent = h.upstream.requests.at(-1)!;
      assert.equal(sent.headers["anthropic-beta"], "a-2025,b-2026");
      assert.equal(sent.headers["anthropic-version"], "2023-06-01");
    });
    await t.step("compact and count_tokens relay on their routes", async () => {
      const compact = await post(`${h.url}/v1/responses/compact`, openaiHeaders(), {
        model: "pt-text",
        input: [{ role: "user", content: "hello" }],
      });
      const body = await compact.json();
      assert.equal(body.object, "response.compaction");
      assert.equal(body.output.at(-1).type, "compaction");
      const count = await post(`${h.url}/v1/messages/count_tokens?beta=true`, anthropicHeaders(), {
        model: "msg-text",
        messages: [{ role: "user", content: "count me" }],
      });
      assert.equal(typeof (await count.json()).input_tokens, "number");
      assert.equal(h.upstream.requests.at(-1)!.path, "/v1/messages/count_tokens");
    });
    await t.step("previous_response_id relays on a passthrough route", async () => {
      const res = await post(`${h.url}/v1/responses`, openaiHeaders(), {
        ...bodies.responses("pt-text"),
        previous_response_id: "resp_abc",
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.equal(JSON.parse(h.upstream.requests.at(-1)!.body).previous_response_id, "resp_abc");
    });
  } finally {
    await h.close();
  }
});

Deno.test("passthrough: provider errors keep their status and envelope", async () => {
  const h = await startHarness();
  try {
    for (const c of INGRESS) {
      const model = c.model.replace("text", "err429");
      const u = urls(h, c, model, false);
      const res = await post(u.gateway, c.headers, c.body(model, false));
      assert.equal(res.status, 429, c.name);
      // The provider's own envelope, in the dialect of the format it shares with the client.
      assert.ok(envelopeMessage(c, await res.json()), c.name);
    }
  } finally {
    await h.close();
  }
});

Deno.test("passthrough: an upstream cut mid-stream ends with the dialect's interruption", async (t) => {
  const h = await startHarness();
  try {
    for (const c of INGRESS) {
      await t.step(c.name, async () => {
        const model = c.model.replace("text", "cut");
        const u = urls(h, c, model, true);
        const bytes = await (await post(u.gateway, c.headers, c.body(model, true))).bytes();
        // Each dialect's own ending (the Anthropic SDK raises only named events, for one).
        assert.ok(cutShort(c, bytes), new TextDecoder().decode(bytes));
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("passthrough: a stalled upstream is cut by the idle timeout", async () => {
  const h = await startHarness({ timeouts: { idle_ms: 200, first_byte_ms: 200 } });
  try {
    for (const c of INGRESS) {
      const model = c.model.replace("text", "stall");
      const u = urls(h, c, model, true);
      const started = performance.now();
      const bytes = await (await post(u.gateway, c.headers, c.body(model, true))).bytes();
      const text = new TextDecoder().decode(bytes);
      assert.ok(performance.now() - started < 10_000, "did not wait for the 60 s stall");
      assert.ok(cutShort(c, bytes), `${c.name}: ${text}`);
      assert.match(text, /within 200 ms/);
    }
  } finally {
    await h.close();
  }
});

Deno.test("passthrough: client disconnect aborts the upstream request", async () => {
  const h = await startHarness();
  try {
    for (const c of INGRESS) {
      await assertDisconnectAborts(h, c, c.model.replace("text", "slow"), c.name);
    }
  } finally {
    await h.close();
  }
});

Deno.test("passthrough: Responses WebSocket relays frames on one upstream socket", async () => {
  const h = await startHarness();
  try {
    const [warm, turn, bad] = await wsExchange(h.url, [
      { type: "response.create", model: "pt-text", input: [], generate: false, store: false },
      (done: WsEvent[][]) => ({
        type: "response.create",
        model: "pt-text",
        input: [{ type: "message", role: "user", content: "hello ws" }],
        previous_response_id: lastResponseId(done),
        store: false,
      }),
      { type: "response.create", model: "pt-text", input: "x", previous_response_id: "resp_nope" },
    ]);
    assert.equal(warm.at(-1)!.type, "response.completed");
    assert.equal(turn[0].type, "response.created");
    assert.equal(turn.at(-1)!.type, "response.completed");
    assert.match(JSON.stringify(turn), /Hello from responses mock: hello ws/);
    assert.equal(bad.at(-1)!.type, "error");
    const upgrades = h.upstream.requests.filter((r) =>
      r.path === "/v1/responses" && r.method === "GET"
    );
    assert.equal(upgrades.length, 1, "one upstream socket per client socket");
    assert.equal(upgrades[0].headers.authorization, "Bearer sk-provider-secret");
    assert.equal(h.upstream.wsFrames.length, 3);
    // One access-log line per relayed response, written when the provider ended it, and the
    // socket's own (101) when it closed.
    const socketLine = () => h.logs.some((l) => l.endpoint === "responses_ws" && l.status === 101);
    for (let i = 0; i < 50 && !socketLine(); i++) await new Promise((r) => setTimeout(r, 10));
    const lines = h.logs.filter((l) => l.endpoint === "responses_ws");
    assert.deepEqual(
      lines.map((l) => l.status),
      [200, 200, 400, 101],
      "each response, then the socket",
    );
    assert.equal((lines[1].usage as { inputTokens: number }).inputTokens, 11);
    assert.equal(typeof lines[1].ttfb_ms, "number");
  } finally {
    await h.close();
  }
});

Deno.test("WebSocket: the upgrade is authenticated", async () => {
  const h = await startHarness();
  try {
    const res = await fetch(`${h.url}/v1/responses`, {
      headers: {
        upgrade: "websocket",
        connection: "upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
      },
    });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, "invalid_api_key");
    const plain = await fetch(`${h.url}/v1/responses`, { headers: openaiHeaders() });
    assert.equal(plain.status, 426);
    await plain.body?.cancel();
  } finally {
    await h.close();
  }
});

Deno.test("access log: one line per request with route, provider and usage", async () => {
  const h = await startHarness();
  try {
    const pt = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("chat-text"),
    );
    await pt.body?.cancel();
    const conv = await post(
      `${h.url}/v1/messages`,
      anthropicHeaders(),
      bodies.messages("chat-text", true),
    );
    await conv.text();
    const [a, b] = h.logs.filter((l) => l.model === "chat-text");
    assert.equal(a.endpoint, "chat");
    assert.equal(a.passthrough, true);
    assert.equal(a.provider, "oai-chat");
    assert.deepEqual(a.usage, {
      inputTokens: 11,
      cacheReadTokens: 3,
      cacheWriteTokens: 2,
      outputTokens: 7,
      reasoningTokens: 0,
    });
    assert.equal(b.endpoint, "messages");
    assert.equal(b.passthrough, false);
    assert.equal(b.status, 200);
    assert.equal((b.usage as { inputTokens: number }).inputTokens, 11);
    for (const l of [a, b]) {
      assert.match(String(l.route), /→ oai-chat \(chat\)/);
      assert.equal(typeof l.duration_ms, "number");
      assert.equal(typeof l.ttfb_ms, "number");
      assert.equal(l.key, "team-a");
    }
  } finally {
    await h.close();
  }
});

Deno.test("passthrough WebSocket: a cut or stalled provider socket is reported", async () => {
  const h = await startHarness({ timeouts: { first_byte_ms: 300, idle_ms: 300 } });
  try {
    for (
      const [model, why] of [["pt-cut", /closed before/], ["pt-stall", /went idle within 300 ms/]]
    ) {
      const [events] = await wsExchange(h.url, [{ type: "response.create", model, input: "x" }]);
      const last = events.at(-1)! as {
        type: string;
        status: number;
        error: { type: string; message: string };
      };
      assert.equal(last.type, "error", String(model));
      assert.equal(last.status, 502);
      assert.equal(last.error.type, "upstream_interrupted");
      assert.match(last.error.message, why as RegExp);
    }
  } finally {
    await h.close();
  }
});
