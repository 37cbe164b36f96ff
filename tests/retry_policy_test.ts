/**
 * Retries stay the gateway's own (issue 25, point 3): every upstream send is one the retry
 * policy decided and counted, hints from upstream are bounded, and a provider-wide 429 moves on
 * to the next target.
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { validateConfig } from "../src/config/config.ts";
import {
  bodies,
  type Harness,
  openaiHeaders,
  post,
  PROVIDER_KEY,
  startHarness,
} from "./helpers.ts";
import { startResettingProvider } from "./mock/resetting.ts";

/** A harness whose config gets extra providers and routes, validated as a raw document. */
function harness(
  providers: Record<string, unknown>[],
  routes: Record<string, unknown>[],
): Promise<Harness> {
  return startHarness({
    tweak(config) {
      const doc = JSON.parse(JSON.stringify(config));
      doc.providers.push(...providers);
      doc.routes.unshift(...routes);
      Object.assign(config, validateConfig(doc) as Config);
    },
  });
}

/** Sends `n` chat requests one after another; returns the sum of `x-gateway-attempts`. */
async function sendChats(h: Harness, model: string, n: number): Promise<number> {
  let attempts = 0;
  for (let i = 0; i < n; i++) {
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat(model));
    await res.body?.cancel();
    attempts += Number(res.headers.get("x-gateway-attempts"));
  }
  return attempts;
}

function attemptsMetric(h: Harness, provider: string): number {
  const re = new RegExp(
    `gateway_upstream_attempts_total\\{provider="${provider}",[^}]*\\} (\\d+)`,
    "g",
  );
  return [...h.gw.metrics.expose().matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
}

Deno.test("retry policy: a provider that resets reused connections receives exactly the attempts the gateway counts", async () => {
  const provider = startResettingProvider();
  const h = await harness(
    [{ name: "resetting", api: "chat", base_url: provider.url + "/v1", api_key: PROVIDER_KEY }],
    [{ models: ["reset-*"], provider: "resetting" }],
  );
  try {
    const attempts = await sendChats(h, "reset-text", 10);
    assert.equal(attempts, 10, "each request answered at the first attempt");
    assert.equal(provider.received(), attempts, "the provider got what the header says");
    assert.equal(attemptsMetric(h, "resetting"), attempts, "and what the metric counts");
  } finally {
    await h.close();
    await provider.close();
  }
});

Deno.test("retry policy (canary): with keep_alive on, Deno replays requests on reused HTTP/1.1 connections", async () => {
  // Why plain-http providers default to keep_alive: false. If this fails, Deno stopped
  // replaying: the default can be revisited (docs/failover.md, "Connections").
  const provider = startResettingProvider();
  const h = await harness(
    [{
      name: "resetting",
      api: "chat",
      base_url: provider.url + "/v1",
      api_key: PROVIDER_KEY,
      keep_alive: true,
    }],
    [{ models: ["reset-*"], provider: "resetting" }],
  );
  try {
    const attempts = await sendChats(h, "reset-text", 10);
    assert.ok(provider.received() > attempts, `${provider.received()} > ${attempts}`);
  } finally {
    await h.close();
    await provider.close();
  }
});

/**
 * An OpenAI-chat provider that answers every call 429, with the `retry-after` and message its
 * model name picks (`RATE_LIMITS`); it records when each call came and with which key.
 */
function startLimitedProvider() {
  const calls: { model: string; at: number; key: string }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const { model } = await req.json();
    calls.push({ model, at: performance.now(), key: req.headers.get("authorization") ?? "" });
    const { after, message } = RATE_LIMITS[model] ?? { message: "Rate limit reached" };
    const headers = new Headers({ "content-type": "application/json" });
    if (after !== undefined) headers.set("retry-after", after);
    const error = { message, type: "requests", code: "rate_limit_exceeded" };
    return new Response(JSON.stringify({ error }), { status: 429, headers });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    calls,
    count: (model: string) => calls.filter((c) => c.model === model).length,
    close: () => server.shutdown(),
  };
}

const RATE_LIMITS: Record<string, { after?: string; message: string }> = {
  "ra-zero": { after: "0", message: "Rate limit reached" },
  "ra-negative": { after: "-5", message: "Rate limit reached" },
  "ra-past": { after: "Wed, 21 Oct 2015 07:28:00 GMT", message: "Rate limit reached" },
  "ra-infinity": { after: "Infinity", message: "Rate limit reached" },
  "ra-huge": { after: "999999", message: "Rate limit reached" },
  // Anthropic and OpenAI word a key's own rate limit as the organisation's: no signal.
  "ra-key": { after: "1", message: "Rate limit reached for gpt-5 in organization org-abc" },
};

async function ask(h: Harness, model: string) {
  const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat(model));
  await res.body?.cancel();
  return {
    status: res.status,
    provider: res.headers.get("x-gateway-provider"),
    attempts: Number(res.headers.get("x-gateway-attempts")),
  };
}

Deno.test("retry policy: retry-after 0, negative or in the past never causes back-to-back resends; a one-target route makes one attempt", async () => {
  const limited = startLimitedProvider();
  const alone = ["ra-zero", "ra-negative", "ra-past", "ra-infinity"];
  const h = await harness(
    [
      { name: "limited", api: "chat", base_url: limited.url, api_key: PROVIDER_KEY },
      { name: "patient", api: "chat", base_url: limited.url, api_key: PROVIDER_KEY },
    ],
    [
      { models: ["ra-*"], provider: "limited" },
      { models: ["wait-*"], provider: "patient", model: "ra-zero", retry: { max_wait_s: 5 } },
    ],
  );
  try {
    for (const model of alone) {
      assert.deepEqual(await ask(h, model), { status: 429, provider: "limited", attempts: 1 });
      assert.equal(limited.count(model), 1, `${model}: one call reached the provider`);
    }
    // Allowed to wait: each resend of the same target waits the jittered backoff first.
    assert.deepEqual(await ask(h, "wait-zero"), { status: 429, provider: "patient", attempts: 3 });
    const at = limited.calls.filter((c) => c.model === "ra-zero").slice(1).map((c) => c.at);
    assert.equal(at.length, 3);
    for (let i = 1; i < at.length; i++) {
      assert.ok(at[i] - at[i - 1] >= 99, `resend ${i} came ${at[i] - at[i - 1]} ms after`);
    }
  } finally {
    await h.close();
    await limited.close();
  }
});

Deno.test("retry policy: retry-after parses strictly", async () => {
  const { retryAfterMs } = await import("../src/request/failover.ts");
  const now = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");
  const of = (name: string, value: string) => retryAfterMs(new Headers({ [name]: value }), now);
  assert.equal(of("retry-after", "7"), 7000);
  assert.equal(of("retry-after", "0"), 0);
  assert.equal(of("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT"), 30_000);
  assert.equal(of("retry-after-ms", "250"), 250);
  assert.equal(of("retry-after-ms", "12.5"), 12.5);
  for (const bad of ["-5", "1e308", "Infinity", "1.5", "", "soon", "0x10"]) {
    assert.equal(of("retry-after", bad), undefined, `retry-after: ${bad}`);
  }
  for (const bad of ["-1", "Infinity", "1e3", "NaN"]) {
    assert.equal(of("retry-after-ms", bad), undefined, `retry-after-ms: ${bad}`);
  }
  assert.equal(of("retry-after", "Wed, 21 Oct 2015 07:27:00 GMT"), undefined, "a past date");
  assert.equal(of("retry-after", "2015-10-21T07:29:00Z"), undefined, "not an HTTP date");
});

Deno.test("retry policy: the cooldown a retry-after causes is capped by cooldown.max_seconds", async () => {
  const limited = startLimitedProvider();
  const h = await harness(
    [{ name: "limited", api: "chat", base_url: limited.url, api_key: PROVIDER_KEY }],
    [{
      models: ["cap-*"],
      targets: [{ provider: "limited", model: "ra-huge" }, {
        provider: "oai-chat",
        model: "chat-text",
      }],
      cooldown: { failures: 3, seconds: 30, max_seconds: 1 },
    }],
  );
  try {
    assert.deepEqual(await ask(h, "cap-a"), { status: 200, provider: "oai-chat", attempts: 2 });
    assert.deepEqual(await ask(h, "cap-b"), { status: 200, provider: "oai-chat", attempts: 1 });
    await new Promise((r) => setTimeout(r, 1100));
    // 999999 s asked, 1 s given: the limited target is tried again.
    assert.deepEqual(await ask(h, "cap-c"), { status: 200, provider: "oai-chat", attempts: 2 });
    assert.equal(limited.count("ra-huge"), 2);
  } finally {
    await h.close();
    await limited.close();
  }
});

Deno.test("retry policy: a provider-wide 429 moves on to the next target instead of spending the attempts on the pool", async () => {
  const limited = startLimitedProvider();
  const pool = ["sk-pool-key-one", "sk-pool-key-two", "sk-pool-key-three"];
  const h = await harness(
    [
      { name: "keys", api: "chat", base_url: limited.url, api_keys: pool },
    ],
    [
      {
        models: ["keys-*"],
        targets: [{ provider: "keys", model: "ra-key" }, {
          provider: "oai-chat",
          model: "chat-text",
        }],
      },
    ],
  );
  try {
    // The same 429 on a second key: the limit is not the key's, the backup answers.
    assert.deepEqual(await ask(h, "keys-a"), { status: 200, provider: "oai-chat", attempts: 3 });
    const keys = limited.calls.filter((c) => c.model === "ra-key").map((c) => c.key);
    assert.equal(new Set(keys).size, 2, "two keys of the pool, not the third");
  } finally {
    await h.close();
    await limited.close();
  }
});
