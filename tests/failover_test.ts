/**
 * Failover, retries and load balancing (issue 10), against the fault-injecting mock: each
 * primary fails in one way (the upstream model name picks the fault), and the test checks who
 * answered, how many upstream attempts it took, and what the client got.
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { validateConfig } from "../src/config/config.ts";
import {
  anthropicHeaders,
  bodies,
  cutShort,
  envelopeMessage,
  googleHeaders,
  type Harness,
  INGRESS,
  type Ingress,
  KEY,
  MOCK_PROVIDERS,
  openaiHeaders,
  post,
  PROVIDER_KEY,
  startHarness,
  wsExchange,
} from "./helpers.ts";
import { Reloader } from "../src/reload.ts";

type Api = string;

/**
 * The API each ingress speaks, and a healthy model of another format to fall back to: the next
 * provider of the mock config's.
 */
const SAME: Record<Ingress["name"], { api: Api; model: string; cross: Api; crossModel: string }> =
  Object.fromEntries(INGRESS.map((c) => {
    const at = MOCK_PROVIDERS.findIndex((p) => p.api === c.name);
    const cross = MOCK_PROVIDERS[(at + 1) % MOCK_PROVIDERS.length];
    return [c.name, {
      api: c.name,
      model: c.model,
      cross: cross.api,
      crossModel: `${cross.prefix}-text`,
    }];
  }));

const BASE: Record<Api, string> = Object.fromEntries(MOCK_PROVIDERS.map((p) => [p.api, p.base]));

/** Whether the routes of a client's own format relay it as is only with `passthrough`. */
const PASSTHROUGH = Object.fromEntries(MOCK_PROVIDERS.map((p) => [p.api, p.passthrough]));

/** A port nothing listens on: connections are refused at once. */
async function deadPort(): Promise<number> {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return await Promise.resolve(port);
}

function provider(name: string, api: Api, url: string, extra: Record<string, unknown> = {}) {
  return { name, api, base_url: url + BASE[api], api_key: PROVIDER_KEY, ...extra };
}

/** A model prefix for a provider API (the mock plays the API its path names, the scenario the rest). */
const PREFIX: Record<Api, string> = Object.fromEntries(
  MOCK_PROVIDERS.map((p) => [p.api, p.prefix]),
);

type Doc = Record<string, unknown> & {
  providers: Record<string, unknown>[];
  routes: Record<string, unknown>[];
};

/** A harness whose config is rebuilt from a raw document (so new fields are validated). */
async function harness(build: (url: string, doc: Doc) => void): Promise<Harness> {
  return await startHarness({
    tweak(config) {
      const doc = JSON.parse(JSON.stringify(config)) as Doc;
      build(config.providers[0].base_url!.replace(/\/v1$/, ""), doc);
      Object.assign(config, validateConfig(doc) as Config);
    },
  });
}

/** Providers `a` and `b` on the mock, and a route `model` that tries a, then b. */
function pair(url: string, doc: Doc, model: string, a: string[], b: string[]) {
  doc.providers.push(provider(a[0], a[1] as Api, url), provider(b[0], b[1] as Api, url));
  doc.routes.unshift({
    models: [model],
    targets: [{ provider: a[0], model: a[2] }, { provider: b[0], model: b[2] }],
  });
}

const headerOf = (res: Response) => ({
  provider: res.headers.get("x-gateway-provider"),
  attempts: Number(res.headers.get("x-gateway-attempts")),
});

/** The client's text: the JSON answer, or every SSE record. Throws on an interruption. */
async function answer(res: Response, label: string): Promise<string> {
  const text = await res.text();
  assert.equal(res.status, 200, `${label}: ${text.slice(0, 400)}`);
  assert.ok(!text.includes("upstream_interrupted"), `${label}: interrupted: ${text}`);
  assert.ok(!/"type":"error"|overloaded_error|response\.failed/.test(text), `${label}: ${text}`);
  assert.ok(!text.includes(PROVIDER_KEY), `${label}: key leaked`);
  return text;
}

const FAULTS = ["err503", "err529", "err429", "hang", "down", "reset"] as const;

/** A server that accepts each connection, reads the request, and closes without answering. */
function resetServer(): { url: string; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const conn of listener) {
      await conn.read(new Uint8Array(64 * 1024)).catch(() => null);
      conn.close();
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    close: () => listener.close(),
  };
}

/** Where a cell's primary lives: refused, reset, or the mock (which plays the fault). */
function primaryUrl(fault: typeof FAULTS[number], mock: string, dead: number, reset: string) {
  return fault === "down" ? `http://127.0.0.1:${dead}` : fault === "reset" ? reset : mock;
}

Deno.test("failover: primary 503/529/429/timeout/refused → the secondary answers (same and cross format, JSON and stream)", async () => {
  const dead = await deadPort();
  const reset = resetServer();
  const h = await harness((url, doc) => {
    // Many failures in a row on purpose: cooldown is tested on its own.
    doc.cooldown = { failures: 1000, seconds: 30 };
    for (const c of INGRESS) {
      const s = SAME[c.name];
      for (const fault of FAULTS) {
        for (const kind of ["same", "cross"] as const) {
          for (const stream of [false, true]) {
            // A primary per cell: a 429's retry-after cools only its own.
            const id = `${c.name}-${fault}-${kind}-${stream}`;
            doc.providers.push(
              provider(`p-${id}`, s.api, primaryUrl(fault, url, dead, reset.url), {
                timeouts: { first_byte_ms: 300 },
              }),
            );
            const secondary = kind === "same"
              ? { provider: `s-${s.api}`, model: s.model }
              : { provider: `s-${s.cross}`, model: s.crossModel };
            doc.routes.unshift({
              models: [`fo-${id}`],
              passthrough: PASSTHROUGH[c.name],
              targets: [
                {
                  provider: `p-${id}`,
                  model: `${PREFIX[s.api]}-${
                    fault.startsWith("err") || fault === "hang" ? fault : "text"
                  }`,
                },
                secondary,
              ],
            });
          }
        }
      }
    }
    for (const api of Object.keys(BASE) as Api[]) {
      doc.providers.push(provider(`s-${api}`, api, url));
    }
  });
  try {
    const cells = INGRESS.flatMap((c) =>
      FAULTS.flatMap((fault) =>
        (["same", "cross"] as const).flatMap((kind) =>
          [false, true].map(async (stream) => {
            const id = `${c.name}-${fault}-${kind}-${stream}`;
            const model = `fo-${id}`;
            const res = await post(h.url + c.path(model, stream), c.headers, c.body(model, stream));
            const got = headerOf(res);
            await answer(res, id);
            const s = SAME[c.name];
            assert.equal(got.provider, `s-${kind === "same" ? s.api : s.cross}`, id);
            assert.equal(got.attempts, 2, `${id}: attempts`);
          })
        )
      )
    );
    const failures = (await Promise.allSettled(cells))
      .flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
    assert.deepEqual(failures, [], failures.join("\n\n"));
    const log = h.logs.find((l) => l.model === "fo-messages-err529-cross-true")!;
    assert.equal(
      log.provider,
      `s-${SAME.messages.cross}`,
      "the access log names the answering target",
    );
    assert.equal(log.attempts, 2);
    const metrics = h.gw.metrics.expose();
    assert.match(
      metrics,
      /gateway_upstream_attempts_total\{provider="p-messages-err529-same-false",outcome="server_error"\} 1\n/,
    );
    assert.match(metrics, /provider="p-chat-hang-same-false",outcome="timeout"\} 1\n/);
    assert.match(metrics, /provider="s-messages",outcome="ok"\} \d+\n/);
  } finally {
    await h.close();
    reset.close();
  }
});

Deno.test("failover: a 200 stream that errors before any content fails over; after content it is the interruption", async () => {
  const h = await harness((url, doc) => {
    doc.cooldown = { failures: 1000, seconds: 30 };
    for (const c of INGRESS) {
      const s = SAME[c.name];
      for (const fault of ["earlyerr", "cut"]) {
        doc.providers.push(provider(`p-${c.name}-${fault}`, s.api, url));
        doc.routes.unshift({
          models: [`fo-${c.name}-${fault}`],
          passthrough: PASSTHROUGH[c.name],
          targets: [
            { provider: `p-${c.name}-${fault}`, model: `${PREFIX[s.api]}-${fault}` },
            { provider: `s-${s.cross}`, model: s.crossModel },
          ],
        });
      }
    }
    for (const api of Object.keys(BASE) as Api[]) {
      doc.providers.push(provider(`s-${api}`, api, url));
    }
    doc.providers.push(provider("p-gem-array", "generate-content", url));
    for (
      const [kind, name, model] of [["same", "s-generate-content", "gem-text"], [
        "cross",
        "s-messages",
        "msg-text",
      ]]
    ) {
      doc.routes.unshift({
        models: [`fo-gem-array-${kind}`],
        targets: [{ provider: "p-gem-array", model: "gem-earlyerr" }, { provider: name, model }],
      });
    }
  });
  try {
    for (const c of INGRESS) {
      const s = SAME[c.name];
      const early = `fo-${c.name}-earlyerr`;
      const res = await post(h.url + c.path(early, true), c.headers, c.body(early, true));
      const got = headerOf(res);
      await answer(res, `${c.name} earlyerr`);
      assert.deepEqual(got, { provider: `s-${s.cross}`, attempts: 2 }, `${c.name} earlyerr`);

      const before = h.upstream.requests.length;
      const cut = `fo-${c.name}-cut`;
      const cutRes = await post(h.url + c.path(cut, true), c.headers, c.body(cut, true));
      const bytes = await cutRes.bytes();
      assert.equal(cutRes.status, 200, new TextDecoder().decode(bytes));
      assert.ok(cutShort(c, bytes), `${c.name}: the interruption ending`);
      assert.deepEqual(headerOf(cutRes), { provider: `p-${c.name}-cut`, attempts: 1 });
      assert.equal(h.upstream.requests.length, before + 1, `${c.name}: no silent retry`);
    }
    // Google's JSON-array stream (no alt=sse): relayed from a Gemini backup or converted.
    for (
      const [model, backup] of [["fo-gem-array-same", "s-generate-content"], [
        "fo-gem-array-cross",
        "s-messages",
      ]]
    ) {
      const res = await post(
        `${h.url}/v1beta/models/${model}:streamGenerateContent`,
        googleHeaders(),
        bodies.gemini(),
      );
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const elements = JSON.parse(text);
      assert.ok(Array.isArray(elements) && !elements.some((e) => e.error), text);
      assert.deepEqual(headerOf(res), { provider: backup, attempts: 2 });
    }
  } finally {
    await h.close();
  }
});

Deno.test("failover: client errors are never retried; when every target fails the client gets the last error in its dialect", async () => {
  const h = await harness((url, doc) => {
    for (const c of INGRESS) {
      const s = SAME[c.name];
      doc.providers.push(
        provider(`a-${c.name}`, s.api, url),
        provider(`b-${c.name}`, s.cross, url),
        provider(`c-${c.name}`, s.cross, url),
      );
      doc.routes.unshift(
        {
          models: [`fo-${c.name}-client`],
          passthrough: PASSTHROUGH[c.name],
          targets: [
            { provider: `a-${c.name}`, model: `${PREFIX[s.api]}-err400` },
            { provider: `b-${c.name}`, model: s.crossModel },
          ],
        },
        {
          models: [`fo-${c.name}-all`],
          targets: [
            { provider: `a-${c.name}`, model: `${PREFIX[s.api]}-err503` },
            { provider: `c-${c.name}`, model: `${PREFIX[s.cross]}-err529` },
          ],
        },
      );
    }
  });
  try {
    for (const c of INGRESS) {
      const before = h.upstream.requests.length;
      const client = `fo-${c.name}-client`;
      const res = await post(h.url + c.path(client, false), c.headers, c.body(client, false));
      const text = await res.text();
      assert.equal(res.status, 400, `${c.name}: ${text}`);
      assert.deepEqual(headerOf(res), { provider: `a-${c.name}`, attempts: 1 });
      assert.equal(h.upstream.requests.length, before + 1, `${c.name}: a 400 is not retried`);

      const all = `fo-${c.name}-all`;
      for (const stream of [false, true]) {
        const r = await post(h.url + c.path(all, stream), c.headers, c.body(all, stream));
        const body = await r.json();
        // The last target's overload (an OpenAI-format provider says 503).
        assert.equal(r.status, 503, `${c.name}: ${JSON.stringify(body)}`);
        assert.deepEqual(headerOf(r), { provider: `c-${c.name}`, attempts: 2 });
        envelopeMessage(c, body, "overloaded");
      }
    }
  } finally {
    await h.close();
  }
});

Deno.test("failover: retry.on takes error kinds; Anthropic's 529 is overloaded by the messages plugin, a status in on: matches as answered", async () => {
  // The primary answers Anthropic's 529 as an HTML page: only its plugin's statuses know it.
  const primary = "msg-err529html";
  const routes: [string, unknown[]][] = [
    ["by-kind", ["overloaded"]],
    ["by-status", [529]],
    ["other-status", [503]],
    ["default", []],
  ];
  const h = await harness((url, doc) => {
    doc.cooldown = { failures: 1000, seconds: 30 }; // the primary fails on every request
    doc.providers.push(provider("ant-529", "messages", url), provider("oai-ok", "chat", url));
    for (const [name, on] of routes) {
      doc.routes.unshift({
        models: [`retry-${name}`],
        targets: [{ provider: "ant-529", model: primary }, {
          provider: "oai-ok",
          model: "chat-text",
        }],
        ...(on.length > 0 && { retry: { on } }),
      });
    }
  });
  try {
    const messages = INGRESS.find((c) => c.name === "messages")!;
    const chat = INGRESS.find((c) => c.name === "chat")!;
    for (const model of ["retry-by-kind", "retry-by-status", "retry-default"]) {
      const res = await post(
        h.url + messages.path(model, false),
        messages.headers,
        messages.body(model, false),
      );
      await answer(res, model);
      assert.deepEqual(headerOf(res), { provider: "oai-ok", attempts: 2 }, model);
    }
    // Not retried: the client gets the overload in its own dialect.
    const model = "retry-other-status";
    const res = await post(
      h.url + messages.path(model, false),
      messages.headers,
      messages.body(model, false),
    );
    const body = await res.json();
    assert.equal(res.status, 529, JSON.stringify(body));
    assert.deepEqual(headerOf(res), { provider: "ant-529", attempts: 1 });
    assert.equal(body.error.type, "overloaded_error");
    const openai = await post(
      h.url + chat.path(model, false),
      chat.headers,
      chat.body(model, false),
    );
    const error = (await openai.json()).error;
    assert.equal(openai.status, 503, JSON.stringify(error));
    assert.equal(error.type, "service_unavailable_error");
  } finally {
    await h.close();
  }
});

Deno.test("failover: a failing target cools down (skipped without an attempt) and comes back by itself", async () => {
  let down = true;
  let mock = "";
  // In front of the mock: 503 while `down`, the mock's own answer after.
  const flaky = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (down) {
      const error = { type: "api_error", message: "down" };
      return Response.json({ type: "error", error }, { status: 503 });
    }
    const res = await fetch(mock + new URL(req.url).pathname, {
      method: "POST",
      headers: req.headers,
      body: await req.text(),
    });
    return new Response(await res.text(), { status: res.status, headers: res.headers });
  });
  const h = await harness((_url, doc) => {
    mock = _url;
    doc.providers.push(provider("flaky", "messages", `http://127.0.0.1:${flaky.addr.port}`));
    doc.providers.push(provider("backup", "chat", _url));
    doc.routes.unshift({
      models: ["fo-cool"],
      cooldown: { failures: 2, seconds: 0.4 },
      targets: [{ provider: "flaky", model: "msg-text" }, {
        provider: "backup",
        model: "chat-text",
      }],
    });
  });
  const ask = async () => {
    const res = await post(h.url + "/v1/messages", anthropicHeaders(), bodies.messages("fo-cool"));
    await answer(res, "fo-cool");
    return headerOf(res);
  };
  try {
    assert.deepEqual(await ask(), { provider: "backup", attempts: 2 });
    assert.deepEqual(await ask(), { provider: "backup", attempts: 2 });
    // Two failures in a row: the next requests skip it without an attempt.
    assert.deepEqual(await ask(), { provider: "backup", attempts: 1 });
    down = false;
    // A reload keeps the cooldown of a provider that still exists (issue 13).
    const reload = new Reloader(h.gw, () => h.gw.live.current.config).reload("test");
    assert.equal(reload.outcome, "applied");
    assert.deepEqual(await ask(), { provider: "backup", attempts: 1 }, "still cooling");
    await new Promise((r) => setTimeout(r, 450));
    assert.deepEqual(await ask(), { provider: "flaky", attempts: 1 }, "back after its cooldown");
  } finally {
    await h.close();
    await flaky.shutdown();
  }
});

Deno.test("failover: a pool key refused (401) or rate-limited (429) is rotated out; keys are named, never shown", async () => {
  const REVOKED = "sk-pool-revoked-0001";
  const GOOD = "sk-pool-good-00002";
  const h = await harness((url, doc) => {
    for (const status of [401, 429]) {
      doc.providers.push({
        name: `pool-${status}`,
        api: "messages",
        base_url: url,
        api_keys: [REVOKED, GOOD],
      });
      doc.routes.unshift({
        models: [`fo-pool-${status}`],
        targets: [{ provider: `pool-${status}`, model: `msg-keyerr${status}` }],
      });
    }
    doc.routes.unshift({
      models: ["fo-pool-echo"],
      targets: [{ provider: "pool-429", model: "msg-err400echo" }],
    });
  });
  try {
    for (const status of [401, 429]) {
      const model = `fo-pool-${status}`;
      // Each session keeps to the key it ranks first: the first that ranks the revoked key first
      // is refused there and moves to the next key; every session after it goes straight there.
      let rotated = false;
      for (let i = 0; i < 20 && !rotated; i++) {
        const before = h.upstream.requests.length;
        const body = { ...bodies.messages(model), messages: [{ role: "user", content: `s${i}` }] };
        const first = await post(h.url + "/v1/messages", anthropicHeaders(), body);
        await answer(first, model);
        const sent = h.upstream.requests.slice(before).map((r) => r.headers["x-api-key"]);
        assert.equal(sent.at(-1), GOOD, `${status}: answered with the good key`);
        if (sent.length === 1) continue; // this session ranks the good key first
        assert.deepEqual(sent, [REVOKED, GOOD], `${status}: the next key of the pool`);
        assert.deepEqual(headerOf(first), { provider: `pool-${status}`, attempts: 2 });
        rotated = true;
        // The refused key stays out of rotation: the same session goes straight to the good one.
        const second = await post(h.url + "/v1/messages", anthropicHeaders(), body);
        await answer(second, model);
        assert.equal(headerOf(second).attempts, 1);
        assert.equal(h.upstream.requests.at(-1)!.headers["x-api-key"], GOOD);
      }
      assert.ok(rotated, `${status}: some session ranked the revoked key first`);
    }
    // Every pool key is scrubbed from what a provider echoes.
    const echo = await post(
      h.url + "/v1/messages",
      anthropicHeaders(),
      bodies.messages("fo-pool-echo"),
    );
    const text = await echo.text();
    assert.equal(echo.status, 400);
    assert.match(text, /\[redacted\]/);
    const logs = JSON.stringify(h.logs);
    for (const key of [REVOKED, GOOD]) {
      assert.ok(!text.includes(key) && !logs.includes(key), "no pool key in a response or log");
    }
    assert.ok(h.logs.some((l) => l.provider_key === "pool-401#1"), "keys named <provider>#<index>");
  } finally {
    await h.close();
  }
});

Deno.test("failover: weights 3:1 spread 1,000 sessions by weight; each session keeps its target", async () => {
  const h = await harness((url, doc) => {
    doc.providers.push(provider("east", "chat", url), provider("west", "chat", url));
    doc.routes.unshift({
      models: ["fo-spread"],
      balance: "weighted",
      targets: [{ provider: "east", weight: 3, model: "chat-text" }, {
        provider: "west",
        weight: 1,
        model: "chat-text",
      }],
    });
  });
  const ask = async (session: string) => {
    const body = { ...bodies.chat("fo-spread"), messages: [{ role: "user", content: session }] };
    const res = await post(h.url + "/v1/chat/completions", openaiHeaders(), body);
    await res.body?.cancel();
    assert.equal(res.status, 200);
    return res.headers.get("x-gateway-provider")!;
  };
  try {
    const counts: Record<string, number> = {};
    const first: string[] = [];
    for (let batch = 0; batch < 100; batch++) {
      const picks = await Promise.all(
        Array.from({ length: 10 }, (_, i) => ask(`s${batch * 10 + i}`)),
      );
      first.push(...picks);
      for (const p of picks) counts[p] = (counts[p] ?? 0) + 1;
    }
    // Rendezvous hashing weighs each session's draw: about three in four go east.
    assert.ok(
      Math.abs(counts.east - 750) <= 40 && counts.east + counts.west === 1000,
      JSON.stringify(counts),
    );
    // A session's later requests go where its first went, whatever the others do.
    const again = await Promise.all(Array.from({ length: 50 }, (_, i) => ask(`s${i * 20}`)));
    assert.deepEqual(again, Array.from({ length: 50 }, (_, i) => first[i * 20]));
  } finally {
    await h.close();
  }
});

Deno.test("failover: a target that cannot express the request is skipped without an attempt", async () => {
  const h = await harness((url, doc) =>
    pair(url, doc, "fo-skip", ["strict", "messages", "msg-text"], ["able", "chat", "chat-text"])
  );
  try {
    const before = h.upstream.requests.length;
    // Anthropic cannot give several choices: that target is not asked, nor counted.
    const body = { ...bodies.chat("fo-skip"), n: 2 };
    const res = await post(h.url + "/v1/chat/completions", openaiHeaders(), body);
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.deepEqual(headerOf(res), { provider: "able", attempts: 1 });
    assert.equal(h.upstream.requests.length, before + 1);
  } finally {
    await h.close();
  }
});

Deno.test("failover: Responses WebSocket frames on a converted route fail over like HTTP", async () => {
  const h = await harness((url, doc) =>
    pair(url, doc, "fo-ws", ["ws-a", "messages", "msg-err529"], [
      "ws-b",
      "generate-content",
      "gem-text",
    ])
  );
  try {
    const frame = { type: "response.create", model: "fo-ws", input: "hi there", store: false };
    const [events] = await wsExchange(h.url, [frame]);
    assert.equal(events.at(-1)!.type, "response.completed", JSON.stringify(events));
    const paths = h.upstream.requests.map((r) => r.path);
    assert.ok(
      paths.includes("/v1/messages") && paths.some((p) => p.includes(":streamGenerateContent")),
    );
    const log = h.logs.find((l) => l.model === "fo-ws" && l.status === 200);
    assert.equal(log?.provider, "ws-b");
    assert.equal(log?.attempts, 2);
  } finally {
    await h.close();
  }
});

Deno.test("failover: provider-kept state (previous_response_id on a passthrough route) never moves to another family", async () => {
  const h = await harness((url, doc) => {
    doc.providers.push(provider("oai-down", "responses", url), provider("claude", "messages", url));
    doc.routes.unshift({
      models: ["fo-state"],
      passthrough: true,
      targets: [{ provider: "oai-down", model: "pt-err503" }, {
        provider: "claude",
        model: "msg-text",
      }],
    });
  });
  try {
    const stateless = await post(
      h.url + "/v1/responses",
      openaiHeaders(),
      bodies.responses("fo-state"),
    );
    await answer(stateless, "stateless");
    assert.equal(headerOf(stateless).provider, "claude");

    const before = h.upstream.requests.length;
    const chained = { ...bodies.responses("fo-state"), previous_response_id: "resp_abc" };
    const res = await post(h.url + "/v1/responses", openaiHeaders(), chained);
    const body = await res.json();
    assert.equal(res.status, 503, JSON.stringify(body));
    assert.match(body.error.message, /skipped: previous_response_id/);
    assert.equal(h.upstream.requests.length, before + 1, "the Anthropic target was not asked");

    // A compaction item the provider made is the same kind of state.
    const compacted = {
      ...bodies.responses("fo-state"),
      input: [{ type: "compaction", encrypted_content: "gAAAAB-provider-made" }, {
        role: "user",
        content: "go on",
      }],
    };
    const again = await post(h.url + "/v1/responses", openaiHeaders(), compacted);
    const error = await again.json();
    assert.equal(again.status, 503, JSON.stringify(error));
    assert.match(error.error.message, /skipped: previous_response_id and compaction items/);
    assert.equal(h.upstream.requests.length, before + 2, "again only the Responses target");
  } finally {
    await h.close();
  }
});

Deno.test("failover config: targets, pools and retry are validated with the field named", () => {
  const base = {
    keys: [{ name: "k", key: KEY }],
    providers: [{
      name: "a",
      api: "chat",
      base_url: "http://x",
      api_key: "k1234567",
      api_keys: ["k1234567"],
    }],
    routes: [
      { models: ["x"], provider: "a", targets: [{ provider: "a" }] },
      { models: ["y"], targets: [{ provider: "nope" }] },
      {
        models: ["z"],
        targets: [{ provider: "a", weight: 0 }],
        retry: { attempts: 0, on: [503, 422, "invalid_request"] },
      },
    ],
  };
  assert.throws(() => validateConfig(base), (e: Error) => {
    assert.match(e.message, /providers\[0\]\.api_keys: exclusive with api_key/);
    assert.match(e.message, /routes\[0\]: expected exactly one of provider or targets/);
    assert.match(e.message, /routes\[1\]\.targets\[0\]\.provider: unknown provider \(one of a\)/);
    assert.match(e.message, /routes\[2\]\.targets\[0\]\.weight/);
    assert.match(e.message, /routes\[2\]\.retry\.attempts/);
    assert.match(e.message, /routes\[2\]\.retry\.on\[1\]: 400, 404, 413 and 422 .* never retried/);
    assert.match(
      e.message,
      /routes\[2\]\.retry\.on\[2\]: expected an HTTP status or one of rate_limit, overloaded/,
    );
    return true;
  });
});

Deno.test("failover: a passthrough WebSocket chooses its upstream socket at connect, failing over", async () => {
  const dead = await deadPort();
  const h = await harness((url, doc) => {
    doc.providers.push(
      provider("oai-gone", "responses", `http://127.0.0.1:${dead}`),
      provider("oai-live", "responses", url),
    );
    doc.routes.unshift({
      models: ["fo-wspt"],
      passthrough: true,
      targets: [{ provider: "oai-gone", model: "pt-text" }, {
        provider: "oai-live",
        model: "pt-text",
      }],
    });
  });
  try {
    const frame = { type: "response.create", model: "fo-wspt", input: "hi there" };
    const done = await wsExchange(h.url, [frame, frame]);
    assert.deepEqual(done.map((events) => events.at(-1)!.type), [
      "response.completed",
      "response.completed",
    ]);
    assert.equal(h.upstream.wsFrames.length, 2, "both frames on the live provider's socket");
    const lines = h.logs.filter((l) =>
      l.model === "fo-wspt" && l.endpoint !== undefined && l.status === 200
    );
    assert.deepEqual(lines.map((l) => [l.provider, l.attempts]).slice(0, 2), [["oai-live", 2], [
      "oai-live",
      1,
    ]]);
  } finally {
    await h.close();
  }
});

Deno.test("failover: retry-after cools a target for that long; max_wait_s lets a request wait for it", async () => {
  const h = await harness((url, doc) => {
    doc.providers.push(
      provider("limited", "messages", url),
      provider("spare", "chat", url),
      provider("alone", "messages", url),
      provider("alone-patient", "messages", url),
    );
    doc.routes.unshift(
      {
        models: ["fo-after"],
        targets: [{ provider: "limited", model: "msg-err429" }, {
          provider: "spare",
          model: "chat-text",
        }],
      },
      { models: ["fo-alone"], targets: [{ provider: "alone", model: "msg-err429" }] },
      {
        models: ["fo-patient"],
        retry: { max_wait_s: 1.5 },
        targets: [{ provider: "alone-patient", model: "msg-err429" }],
      },
    );
  });
  const ask = async (model: string) => {
    const res = await post(h.url + "/v1/messages", anthropicHeaders(), bodies.messages(model));
    return { status: res.status, body: await res.text(), ...headerOf(res) };
  };
  try {
    // The mock's 429 says `retry-after: 1`: one failure is enough to skip it for a second.
    assert.deepEqual(
      (({ provider, attempts }) => ({ provider, attempts }))(await ask("fo-after")),
      {
        provider: "spare",
        attempts: 2,
      },
    );
    const second = await ask("fo-after");
    assert.deepEqual([second.provider, second.attempts], ["spare", 1], "skipped while it waits");

    // Nothing else to try and no wait allowed: the 429 goes back at once, retry hint included.
    const alone = await ask("fo-alone");
    assert.deepEqual([alone.status, alone.attempts], [429, 1], alone.body);

    const started = performance.now();
    const patient = await ask("fo-patient");
    const waited = performance.now() - started;
    assert.deepEqual([patient.status, patient.attempts], [429, 2], patient.body);
    assert.ok(waited >= 950 && waited < 1900, `slept for the retry-after: ${waited} ms`);
  } finally {
    await h.close();
  }
});

Deno.test("failover: a conversation with Anthropic thinking signatures stays on Anthropic targets", async () => {
  const h = await harness((url, doc) =>
    pair(url, doc, "fo-sig", ["claude-down", "messages", "msg-err529"], [
      "gpt-up",
      "chat",
      "chat-text",
    ])
  );
  try {
    const plain = await post(h.url + "/v1/messages", anthropicHeaders(), bodies.messages("fo-sig"));
    await answer(plain, "no signatures");
    assert.equal(headerOf(plain).provider, "gpt-up");

    const before = h.upstream.requests.length;
    const signed = bodies.signedMessages("fo-sig");
    const res = await post(h.url + "/v1/messages", anthropicHeaders(), signed);
    const body = await res.json();
    assert.equal(res.status, 529, JSON.stringify(body));
    assert.equal(body.error.type, "overloaded_error");
    assert.match(body.error.message, /skipped: the conversation carries anthropic signatures/);
    assert.deepEqual(headerOf(res), { provider: "claude-down", attempts: 1 });
    assert.equal(h.upstream.requests.length, before + 1, "the OpenAI target was not asked");
  } finally {
    await h.close();
  }
});
