/**
 * No client can grow the gateway's memory without bound (issue 25, point 1): model names are
 * bounded everywhere they enter, upstream answers are read up to a configured size, converted
 * requests are bounded in depth, and WebSockets and streams hold bounded data per client.
 */
import assert from "node:assert/strict";
import { MAX_MODEL_CHARS } from "../src/model_name.ts";
import { MAX_NESTING } from "../src/nesting.ts";
import { Metrics } from "../src/metrics.ts";
import {
  anthropicHeaders,
  bodies,
  googleHeaders,
  type Harness,
  KEY,
  openaiHeaders,
  post,
  startHarness,
  wsExchange,
} from "./helpers.ts";

async function withHarness(
  run: (h: Harness) => Promise<void>,
  opts: Parameters<typeof startHarness>[0] = {},
) {
  const h = await startHarness(opts);
  try {
    await run(h);
  } finally {
    await h.close();
  }
}

/** The error message of a 4xx/5xx in any of the three dialects. */
function messageOf(body: Record<string, unknown>): string {
  return ((body.error as Record<string, unknown>).message as string);
}

// `demo-*` answers any name, as the rename route did: only the bound stops it.
const LONG = "demo-" + "x".repeat(MAX_MODEL_CHARS);

Deno.test("a model name over the bound is a 400 naming model on every endpoint", async () => {
  await withHarness(async (h) => {
    const cases: [string, string, Record<string, string>, unknown][] = [
      ["chat", "/v1/chat/completions", openaiHeaders(), bodies.chat(LONG)],
      ["responses", "/v1/responses", openaiHeaders(), bodies.responses(LONG)],
      ["compact", "/v1/responses/compact", openaiHeaders(), bodies.responses(LONG)],
      ["messages", "/v1/messages", anthropicHeaders(), bodies.messages(LONG)],
      ["count_tokens", "/v1/messages/count_tokens", anthropicHeaders(), bodies.messages(LONG)],
      ["gemini", `/v1beta/models/${LONG}:generateContent`, googleHeaders(), bodies.gemini()],
    ];
    for (const [label, path, headers, body] of cases) {
      const res = await post(h.url + path, headers, body);
      const json = await res.json();
      assert.equal(res.status, 400, `${label}: ${JSON.stringify(json)}`);
      assert.match(
        messageOf(json),
        /^model: \d+ characters is longer than the limit of 256/,
        label,
      );
      assert.ok(JSON.stringify(json).length < 1000, `${label}: the name is not echoed`);
      if (label === "messages" || label === "count_tokens") {
        assert.equal(json.type, "error", label);
      } else if (label === "gemini") assert.equal(json.error.status, "INVALID_ARGUMENT");
      else assert.equal(json.error.param, "model", label);
    }
    // A name at the bound still works.
    const ok = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat(LONG.slice(0, MAX_MODEL_CHARS)),
    );
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  });
});

Deno.test("a model name over the bound in a WebSocket frame is an error frame naming model", async () => {
  await withHarness(async (h) => {
    const [events] = await wsExchange(h.url, [{
      type: "response.create",
      model: LONG,
      input: "hi",
    }]);
    const error = events.at(-1)!;
    assert.equal(error.type, "error");
    assert.match(JSON.stringify(error), /model: \d+ characters is longer than the limit/);
  });
});

Deno.test("an unrouted name, a long path and a metric label are never echoed unbounded", async () => {
  await withHarness(async (h) => {
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat("nope"));
    assert.equal(res.status, 404);
    await res.body?.cancel();
    const path = `/v1beta/models/${"g".repeat(20_000)}:generateContent`;
    const long = await post(h.url + path, googleHeaders(), bodies.gemini());
    assert.equal(long.status, 400);
    await long.body?.cancel();
    const line = h.logs.find((l) => String(l.path).startsWith("/v1beta/models/ggg"))!;
    assert.ok(String(line.path).length <= 1025, `logged path of ${String(line.path).length}`);
    assert.ok(String(line.path).endsWith("…"));
  });
  // Defence in depth: a label value is clipped even if a long name got that far.
  const metrics = new Metrics();
  metrics.ended({
    endpoint: "chat",
    status: 200,
    model: "m".repeat(100_000),
    api: "chat",
    operation: "chat",
    attempts: 1,
    dialect: "openai",
  } as never);
  const text = metrics.expose();
  assert.ok(text.includes(`"${"m".repeat(MAX_MODEL_CHARS)}…"`));
  assert.ok(!text.includes("m".repeat(MAX_MODEL_CHARS + 1)));
});

Deno.test("a non-stream upstream body over max_body_mb is a 502 in the client's dialect", async () => {
  // The mock's `huge` reply is 1 MiB of text: over a 0.5 MiB cap, under the default.
  await withHarness(async (h) => {
    const relayed = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("chat-huge"),
    );
    const rj = await relayed.json();
    assert.equal(relayed.status, 502);
    assert.match(messageOf(rj), /a body over 0\.5 MiB \(max_body_mb\)/);
    const converted = await post(
      `${h.url}/v1/messages`,
      anthropicHeaders(),
      bodies.messages("chat-huge"),
    );
    const cj = await converted.json();
    assert.equal(converted.status, 502);
    assert.equal(cj.type, "error");
    assert.match(messageOf(cj), /max_body_mb/);
    const small = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("chat-text"),
    );
    assert.equal(small.status, 200);
    await small.body?.cancel();
  }, { tweak: (c) => c.providers.forEach((p) => p.max_body_mb = 0.5) });
  await withHarness(async (h) => {
    const res = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("chat-huge"),
    );
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(h.gw.config.providers[0].max_body_mb, 32);
  });
});

/** `{a: {a: … "x"}}`, `levels` objects deep. */
function nested(levels: number): unknown {
  let v: unknown = "x";
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

Deno.test("a 10,000-deep input on a converted Responses request is a 400 naming the field", async () => {
  await withHarness(async (h) => {
    for (const model of ["chat-text", "msg-text", "demo-x"]) {
      const input = [{
        role: "user",
        content: [{ type: "input_text", text: "hi", x: nested(10_000) }],
      }];
      const res = await post(`${h.url}/v1/responses`, openaiHeaders(), { model, input });
      const json = await res.json();
      assert.equal(res.status, 400, `${model}: ${JSON.stringify(json).slice(0, 200)}`);
      assert.equal(json.error.type, "invalid_request_error");
      assert.match(json.error.param, /^input\[0\]\.content\[0\]\.x\.a\.a/);
      assert.match(messageOf(json), /nested more than 128 levels deep$/);
      const tools = [{ type: "function", name: "f", parameters: nested(10_000) }];
      const deepTool = await post(`${h.url}/v1/messages`, anthropicHeaders(), {
        ...bodies.messages(model),
        tools: [{ name: "f", input_schema: nested(10_000) }],
      });
      assert.equal(deepTool.status, model === "msg-text" ? 200 : 400, model); // msg-text relays
      await deepTool.body?.cancel();
      const viaTools = await post(`${h.url}/v1/responses`, openaiHeaders(), {
        model,
        input: "hi",
        tools,
      });
      assert.equal(viaTools.status, 400);
      assert.match((await viaTools.json()).error.param, /^tools\[0\]\.parameters\.a/);
    }
    // At the bound a body still converts.
    const fine = [{
      role: "user",
      content: [{ type: "input_text", text: "hi", x: nested(MAX_NESTING - 6) }],
    }];
    const ok = await post(`${h.url}/v1/responses`, openaiHeaders(), {
      model: "chat-text",
      input: fine,
    });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  });
});

Deno.test("a deep input over a converted Responses WebSocket is an error frame naming the field", async () => {
  await withHarness(async (h) => {
    const input = [{
      role: "user",
      content: [{ type: "input_text", text: "hi", x: nested(10_000) }],
    }];
    const [events] = await wsExchange(h.url, [{
      type: "response.create",
      model: "chat-text",
      input,
    }], {
      authorization: `Bearer ${KEY}`,
    });
    const error = events.at(-1)!;
    assert.equal(error.type, "error");
    assert.match(JSON.stringify(error), /nested more than 128 levels deep/);
  });
});
