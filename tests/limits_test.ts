/**
 * Identities' limits end to end (docs/limits.md): exact refusals at each window kind in each
 * client dialect (JSON, stream, WebSocket) with their headers and retry-after, no upstream call
 * for a refused request, spend from prices, unbilled endpoints counted as requests only, the
 * usage endpoint, reload keeping counts, and Kong consumers. The mock reports 18 tokens for a
 * text answer (11 in, of which 3 cache reads and 2 cache writes; 7 out) and 23 with thinking.
 */
import assert from "node:assert/strict";
import { type Config, validateConfig } from "../src/config/config.ts";
import { MemoryLimitStore } from "../src/state/limits/store.ts";
import type { Limits } from "../src/config/limits.ts";
import { Reloader } from "../src/reload.ts";
import { goDuration } from "../plugins/openai.ts";
import {
  anthropicHeaders,
  googleHeaders,
  type Harness,
  HASHED_KEY,
  KEY,
  openaiHeaders,
  post,
  startHarness,
  wsExchange,
} from "./helpers.ts";

const CHAT = { model: "chat-text", messages: [{ role: "user", content: "hi" }] };
const MESSAGES = { model: "msg-text", max_tokens: 50, messages: [{ role: "user", content: "hi" }] };
const GEMINI = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };

/** A harness whose key team-a has `limits` (and `tweak`'s other changes). */
function limited(limits: Limits, tweak?: (c: Config) => void, limitStore?: MemoryLimitStore) {
  return startHarness({
    limitStore,
    tweak: (c) => {
      c.keys[0] = { ...c.keys[0], limits };
      tweak?.(c);
    },
  });
}

/** Calls that reach the mock provider (not its model lists, read in the background). */
const upstreamCalls = (h: Harness) => h.upstream.requests.filter((r) => r.method === "POST").length;

async function json(res: Response) {
  return { status: res.status, headers: res.headers, body: await res.json() };
}

const usage = (h: Harness, query = "", key = KEY) =>
  fetch(`${h.url}/v1/gateway/usage${query}`, { headers: openaiHeaders(key) }).then(json);

Deno.test("limits: requests_per_minute refuses the third chat request in OpenAI's dialect", async () => {
  const h = await limited({ requests_per_minute: 2 });
  try {
    const remaining = [];
    for (let i = 0; i < 2; i++) {
      const ok = await json(await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT));
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get("x-ratelimit-limit-requests"), "2");
      assert.match(ok.headers.get("x-ratelimit-reset-requests")!, /^(1m0s|[1-5]?\ds)$/);
      remaining.push(ok.headers.get("x-ratelimit-remaining-requests"));
    }
    assert.deepEqual(remaining, ["1", "0"]);
    const calls = upstreamCalls(h);
    const refused = await json(await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT));
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.type, "rate_limit_error");
    assert.equal(refused.body.error.code, "rate_limit_exceeded");
    assert.match(
      refused.body.error.message,
      /^team-a has reached its limit requests_per_minute \(2 requests per minute\); it frees at \d{4}-\d\d-\d\dT[\d:.]+Z \(in \d+s\)$/,
    );
    const retry = Number(refused.headers.get("retry-after"));
    assert.ok(retry >= 1 && retry <= 60, `retry-after ${retry}`);
    assert.equal(refused.headers.get("x-ratelimit-remaining-requests"), "0");
    assert.equal(refused.headers.get("x-ratelimit-reset-requests"), goDuration(retry * 1000));
    assert.equal(upstreamCalls(h), calls, "no upstream call for a refused request");
    assert.equal(refused.headers.get("x-should-retry"), null);
    // Another identity is not limited by team-a's window.
    const other = await post(`${h.url}/v1/chat/completions`, openaiHeaders(HASHED_KEY), CHAT);
    assert.equal(other.status, 200);
    assert.equal(
      other.headers.get("x-ratelimit-limit-requests"),
      "10000",
      "the provider's, relayed",
    );
    await other.body?.cancel();
    const [rejections] = h.gw.metrics.limitRejections.expose().split("\n").filter((l) =>
      l.startsWith("gateway_limit_rejections_total{")
    );
    assert.equal(
      rejections,
      'gateway_limit_rejections_total{key="team-a",limit="requests_per_minute"} 1',
    );
    const log = h.logs.findLast((l) => l.msg === "access")!;
    assert.equal(log.identity, "team-b");
  } finally {
    await h.close();
  }
});

Deno.test("limits: tokens_per_day refuses in Anthropic's dialect once two answers used 36 of 30", async () => {
  const h = await limited({ tokens_per_day: 30 });
  try {
    const first = await post(`${h.url}/v1/messages`, anthropicHeaders(), MESSAGES);
    assert.equal(first.status, 200);
    await first.body?.cancel();
    assert.equal(first.headers.get("anthropic-ratelimit-tokens-limit"), "30");
    assert.equal(first.headers.get("anthropic-ratelimit-tokens-remaining"), "12");
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    assert.equal(first.headers.get("anthropic-ratelimit-tokens-reset"), `${tomorrow}T00:00:00Z`);
    // 18 < 30: admitted, and it overshoots (a request that started is never cut).
    const second = await post(`${h.url}/v1/messages`, anthropicHeaders(), MESSAGES);
    assert.equal(second.status, 200);
    assert.equal(second.headers.get("anthropic-ratelimit-tokens-remaining"), "0");
    await second.body?.cancel();
    const refused = await json(await post(`${h.url}/v1/messages`, anthropicHeaders(), MESSAGES));
    assert.equal(refused.status, 429);
    assert.equal(refused.body.type, "error");
    assert.equal(refused.body.error.type, "rate_limit_error");
    assert.match(
      refused.body.error.message,
      /its limit tokens_per_day \(30 tokens per day \(UTC\)\); it frees at \d{4}-\d\d-\d\dT00:00:00\.000Z/,
    );
    const untilMidnight = Math.ceil((Date.parse(`${tomorrow}T00:00:00Z`) - Date.now()) / 1000);
    assert.ok(Math.abs(Number(refused.headers.get("retry-after")) - untilMidnight) <= 2);
    assert.equal(refused.headers.get("anthropic-ratelimit-tokens-remaining"), "0");
    // Hours away: the SDKs are told not to retry in vain.
    assert.equal(refused.headers.get("x-should-retry"), "false");
    // The same identity is refused in every dialect, here OpenAI's: a spent budget.
    const openai = await json(await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT));
    assert.equal(openai.status, 429);
    assert.equal(openai.body.error.code, "insufficient_quota");
    assert.equal(openai.headers.get("x-ratelimit-remaining-tokens"), "0");
  } finally {
    await h.close();
  }
});

Deno.test("limits: spend_per_month_usd from prices (cache and reasoning parts), Google's dialect", async () => {
  const h = await limited({ spend_per_month_usd: 0.0003 }, (c) => {
    c.prices = [
      { models: ["msg-*"], input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
      // Prices match the upstream name: `renamed-*` is sent as chat-text-renamed.
      { models: ["chat-text-renamed"], input: 1, output: 2 },
    ];
  });
  try {
    // 6 plain input × 3 + 3 cache reads × 0.3 + 2 writes × 3.75 + (7 + 5 reasoning) × 15 = 206.4 µ$
    const think = { ...MESSAGES, model: "msg-think" };
    const first = await post(`${h.url}/v1/messages`, anthropicHeaders(), think);
    assert.equal(first.status, 200);
    await first.body?.cancel();
    let seen = await usage(h);
    assert.ok(Math.abs(seen.body.windows.spend_per_month_usd.used - 0.0002064) < 1e-12);
    // Renamed: 11 × 1 + 7 × 2 = 25 µ$, priced by the upstream name.
    const renamed = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), {
      ...CHAT,
      model: "renamed-x",
    });
    assert.equal(renamed.status, 200);
    await renamed.body?.cancel();
    seen = await usage(h);
    assert.ok(Math.abs(seen.body.windows.spend_per_month_usd.used - 0.0002314) < 1e-12);
    // Unpriced (gem-*): no spend, still admitted.
    const gem = await post(
      `${h.url}/v1beta/models/gem-text:generateContent`,
      googleHeaders(),
      GEMINI,
    );
    assert.equal(gem.status, 200);
    await gem.body?.cancel();
    const again = await post(`${h.url}/v1/messages`, anthropicHeaders(), think);
    assert.equal(again.status, 200);
    await again.body?.cancel();
    const refused = await json(
      await post(`${h.url}/v1beta/models/gem-text:generateContent`, googleHeaders(), GEMINI),
    );
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.status, "RESOURCE_EXHAUSTED");
    assert.equal(refused.body.error.code, 429);
    assert.match(
      refused.body.error.message,
      /its limit spend_per_month_usd \(0\.0003 USD per month \(UTC\)\); it frees at \d{4}-\d\d-01T00:00:00\.000Z/,
    );
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    const spend = h.gw.metrics.spend.expose();
    assert.match(
      spend,
      /gateway_spend_usd_total\{key="team-a",provider="anthropic",model="msg-think"\} 0\.000412/,
    );
    assert.match(
      spend,
      /gateway_spend_usd_total\{key="team-a",provider="oai-chat",model="chat-text-renamed"\} 0\.000025/,
    );
    // Tokens carry the same model label as spend for the same traffic: the upstream model.
    const tokens = h.gw.metrics.tokens.expose() + h.gw.metrics.tokenDetails.expose();
    assert.match(
      tokens,
      /gateway_tokens_total\{key="team-a",route="renamed-\*",provider="oai-chat",model="chat-text-renamed",type="input",billable="true"\} 11/,
    );
    assert.doesNotMatch(tokens, /model="renamed-x"/);
  } finally {
    await h.close();
  }
});

Deno.test("limits: a stream is counted at its end; the next one is refused before any upstream call", async () => {
  const h = await limited({ tokens_per_minute: 18 });
  try {
    const body = { ...CHAT, stream: true, stream_options: { include_usage: true } };
    const first = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), body);
    assert.equal(first.status, 200);
    // Headers go out before the usage is known: they count what the stream holds until then
    // (its reservation: its body's estimate and 4096 for the output it names no bound for).
    assert.equal(first.headers.get("x-ratelimit-remaining-tokens"), "0");
    await first.text();
    const calls = upstreamCalls(h);
    const refused = await json(await post(`${h.url}/v1/chat/completions`, openaiHeaders(), body));
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, "rate_limit_exceeded");
    assert.match(
      refused.body.error.message,
      /its limit tokens_per_minute \(18 tokens per minute\)/,
    );
    assert.match(refused.headers.get("x-ratelimit-reset-tokens")!, /^(1m0s|[1-5]?\ds)$/);
    assert.equal(upstreamCalls(h), calls);
    // An Anthropic stream is refused the same way.
    const msg = await json(
      await post(`${h.url}/v1/messages`, anthropicHeaders(), { ...MESSAGES, stream: true }),
    );
    assert.equal(msg.status, 429);
    assert.equal(msg.body.error.type, "rate_limit_error");
  } finally {
    await h.close();
  }
});

Deno.test("limits: a chat stream without include_usage is counted; it still shows no usage", async () => {
  const h = await limited({ tokens_per_day: 18 });
  try {
    const body = { ...CHAT, stream: true };
    const first = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), body);
    assert.equal(first.status, 200);
    const text = await first.text();
    assert.ok(!text.includes('"usage"'), "no usage chunk the client did not ask for");
    assert.match(text, /data: \[DONE\]\n\n$/);
    // The gateway asked the provider for the usage it counts.
    const sent = h.upstream.requests.findLast((r) => r.method === "POST")!;
    assert.deepEqual((sent.json as Record<string, unknown>).stream_options, {
      include_usage: true,
    });
    assert.equal((await usage(h)).body.windows.tokens_per_day.used, 18);
    const refused = await json(await post(`${h.url}/v1/chat/completions`, openaiHeaders(), body));
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, "insufficient_quota");
    assert.equal((await usage(h)).body.windows.tokens_per_day.used, 18);
    const chat = h.logs.filter((l) => l.msg === "access" && l.path === "/v1/chat/completions");
    assert.deepEqual(chat.map((l) => [l.status, l.passthrough]), [[200, false], [429, undefined]]);
  } finally {
    await h.close();
  }
});

Deno.test("limits: a chat stream with include_usage stays relayed", async () => {
  const h = await limited({ tokens_per_day: 100 });
  try {
    const body = { ...CHAT, stream: true, stream_options: { include_usage: true } };
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), body);
    assert.match(await res.text(), /"usage":\{/);
    const chat = h.logs.findLast((l) => l.msg === "access" && l.path === "/v1/chat/completions");
    assert.equal(chat!.passthrough, true, "the fast path");
    assert.equal((await usage(h)).body.windows.tokens_per_day.used, 18);
  } finally {
    await h.close();
  }
});

Deno.test("limits: an interrupted stream's reported usage is counted", async () => {
  const h = await limited({ tokens_per_day: 1000 });
  try {
    const res = await post(`${h.url}/v1/messages`, anthropicHeaders(), {
      ...MESSAGES,
      model: "msg-cut",
      stream: true,
    });
    await res.text();
    const log = h.logs.findLast((l) => l.msg === "access")!;
    assert.equal(log.interrupted, true);
    const used = (await usage(h)).body.windows.tokens_per_day.used;
    const logged = (log.input_tokens as number ?? 0) + (log.output_tokens as number ?? 0);
    assert.ok(logged > 0, "the mock's cut stream reports usage before the cut");
    assert.equal(used, logged);
  } finally {
    await h.close();
  }
});

Deno.test("limits: a refused WebSocket response gets an error frame and the socket stays open", async () => {
  const h = await limited({ requests_per_minute: 1 });
  try {
    const frame = { type: "response.create", model: "msg-text", input: "hi" };
    const [ok, refused, again] = await wsExchange(h.url, [frame, frame, frame]);
    assert.equal(ok.at(-1)!.type, "response.completed");
    for (const r of [refused, again]) {
      assert.equal(r.length, 1);
      const e = r[0] as { type: string; error: { type: string; code: string; message: string } };
      assert.equal(e.type, "error");
      assert.equal(e.error.type, "rate_limit_error");
      assert.equal(e.error.code, "rate_limit_exceeded");
      assert.match(
        e.error.message,
        /its limit requests_per_minute \(1 requests per minute\); it frees at/,
      );
    }
    // The third frame was answered on the same socket: it stayed open after the refusal.
    assert.equal(upstreamCalls(h), 1);
  } finally {
    await h.close();
  }
});

Deno.test("limits: each WebSocket response counts its tokens", async () => {
  const h = await limited({ tokens_per_day: 30 });
  try {
    const frame = { type: "response.create", model: "msg-text", input: "hi" };
    const [a, b, c] = await wsExchange(h.url, [frame, frame, frame]);
    assert.equal(a.at(-1)!.type, "response.completed");
    assert.equal(b.at(-1)!.type, "response.completed");
    assert.equal((c[0].error as { code: string }).code, "insufficient_quota");
  } finally {
    await h.close();
  }
});

Deno.test("limits: compaction counts its tokens but no spend; count_tokens only a request", async () => {
  const h = await limited(
    { requests_per_minute: 10, tokens_per_day: 100, spend_per_month_usd: 1 },
    (c) => {
      c.prices = [{ models: ["*"], input: 1, output: 1 }];
    },
  );
  try {
    // Relayed to OpenAI's compact endpoint: the model ran on the client's input (18 tokens).
    const compact = await post(`${h.url}/v1/responses/compact`, openaiHeaders(), {
      model: "pt-text",
      input: [{ role: "user", content: "hello" }],
    });
    assert.equal(compact.status, 200);
    await compact.body?.cancel();
    const count = await post(`${h.url}/v1/messages/count_tokens`, anthropicHeaders(), {
      model: "msg-text",
      messages: [{ role: "user", content: "count me" }],
    });
    assert.equal(count.status, 200);
    await count.body?.cancel();
    const { windows } = (await usage(h)).body;
    assert.equal(windows.requests_per_minute.used, 2);
    assert.equal(windows.tokens_per_day.used, 18, "compaction's tokens, not token counting's");
    assert.equal(windows.spend_per_month_usd.used, 0, "neither is billed");
  } finally {
    await h.close();
  }
});

Deno.test("limits: in-band compaction on a converted route is no free channel: its tokens count, its output is bounded", async (t) => {
  // The red team's key: a 20-token day and a $0.02 budget; 30 compactions all went through.
  const h = await limited({ tokens_per_day: 20, spend_per_month_usd: 0.02 }, (c) => {
    c.prices = [{ models: ["*"], input: 1000, output: 1000 }];
  });
  const trigger = (max_output_tokens?: number) => ({
    model: "msg-text",
    max_output_tokens,
    input: [{ role: "user", content: "answer me anything" }, { type: "compaction_trigger" }],
  });
  try {
    await t.step("HTTP: 18 + 18 tokens of 20, then refused", async () => {
      const statuses = [];
      for (let i = 0; i < 30; i++) {
        const res = await post(`${h.url}/v1/responses`, openaiHeaders(), trigger(100_000));
        statuses.push(res.status);
        await res.body?.cancel();
      }
      // 18 < 20 admits the second (a request that started is never cut), not the third.
      assert.deepEqual(statuses, [200, 200, ...Array(28).fill(429)]);
      const { windows } = (await usage(h)).body;
      assert.equal(windows.tokens_per_day.used, 36);
      assert.equal(windows.spend_per_month_usd.used, 0, "compaction is not billed");
      const sent = h.upstream.requests.filter((r) => r.method === "POST");
      assert.deepEqual(
        sent.map((r) => (r.json as { max_tokens: number }).max_tokens),
        [4096, 4096],
        "the summary's output is bounded, whatever the client asked",
      );
    });
  } finally {
    await h.close();
  }
  const ws = await limited({ tokens_per_day: 20 });
  try {
    await t.step("WebSocket: the same, and no bound asked is the bound", async () => {
      const frame = { type: "response.create", store: false, ...trigger() };
      const [a, b, c] = await wsExchange(ws.url, [frame, frame, frame]);
      assert.equal(a.at(-1)!.type, "response.completed");
      assert.equal(b.at(-1)!.type, "response.completed");
      assert.equal((c[0].error as { code: string }).code, "insufficient_quota");
      const sent = ws.upstream.requests.filter((r) => r.method === "POST");
      assert.deepEqual(sent.map((r) => (r.json as { max_tokens: number }).max_tokens), [
        4096,
        4096,
      ]);
    });
  } finally {
    await ws.close();
  }
});

Deno.test("limits: GET /v1/gateway/usage for oneself, an admin's ?identity= and ?all=true, 403 otherwise", async () => {
  const h = await limited({ requests_per_minute: 1, tokens_per_day: 100 }, (c) => {
    c.keys[1] = { ...c.keys[1], admin: true, limits: { tokens_per_minute: 1000 } };
  });
  try {
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
    await res.body?.cancel();
    // Answered while exhausted, and not counted.
    for (let i = 0; i < 2; i++) {
      const own = await usage(h);
      assert.equal(own.status, 200);
      assert.deepEqual(Object.keys(own.body.windows), ["requests_per_minute", "tokens_per_day"]);
      assert.equal(own.body.identity, "team-a");
      const rpm = own.body.windows.requests_per_minute;
      assert.deepEqual([rpm.limit, rpm.used, rpm.remaining], [1, 1, 0]);
      assert.match(rpm.reset, /^\d{4}-\d\d-\d\dT[\d:.]+Z$/);
      assert.deepEqual(own.body.windows.tokens_per_day.used, 18);
    }
    // Any client auth the gateway accepts: Anthropic's header too.
    const viaAnthropic = await fetch(`${h.url}/v1/gateway/usage`, { headers: anthropicHeaders() });
    assert.equal((await viaAnthropic.json()).identity, "team-a");
    const forbidden = await usage(h, "?identity=team-b");
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.error.type, "permission_error");
    assert.equal((await usage(h, "?all=true")).status, 403);
    const asAdmin = await usage(h, "?identity=team-a", HASHED_KEY);
    assert.equal(asAdmin.body.windows.requests_per_minute.used, 1);
    const all = await usage(h, "?all=true", HASHED_KEY);
    assert.deepEqual(all.body.identities.map((i: { identity: string }) => i.identity), [
      "team-a",
      "team-b",
    ]);
    assert.equal((await usage(h, "?identity=nobody", HASHED_KEY)).status, 404);
  } finally {
    await h.close();
  }
});

Deno.test("limits: a reload keeps the counts (in memory, by identity name)", async () => {
  const h = await limited({ requests_per_minute: 2 });
  try {
    for (let i = 0; i < 2; i++) {
      const r = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
      assert.equal(r.status, 200);
      await r.body?.cancel();
    }
    const config = h.gw.config;
    const next = {
      ...config,
      keys: config.keys.map((k, i) => i === 0 ? { ...k, limits: { requests_per_minute: 3 } } : k),
    };
    assert.equal(new Reloader(h.gw, () => next).reload("test").outcome, "applied");
    const third = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
    assert.equal(third.status, 200);
    assert.equal(third.headers.get("x-ratelimit-remaining-requests"), "0");
    await third.body?.cancel();
    const fourth = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
    assert.equal(fourth.status, 429);
    await fourth.body?.cancel();
  } finally {
    await h.close();
  }
});

Deno.test("limits: a sliding window frees when its oldest request leaves (1.5 s window)", async () => {
  const h = await limited({ requests_per_minute: 1 }, undefined, new MemoryLimitStore(1500));
  try {
    const first = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
    assert.equal(first.status, 200);
    await first.body?.cancel();
    const refused = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get("retry-after"), "2");
    await refused.body?.cancel();
    await new Promise((r) => setTimeout(r, 1600));
    const freed = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
    assert.equal(freed.status, 200);
    await freed.body?.cancel();
  } finally {
    await h.close();
  }
});

Deno.test("limits: consumer names as metric key labels are bounded like models (max_label_values)", async () => {
  const h = await limited({ requests_per_minute: 100 }, (c) => {
    c.identities = { kong_consumers: true };
    c.consumers = { default_limits: { requests_per_minute: 1 }, by_name: {} };
    c.metrics = { hostname: "127.0.0.1", port: 0, max_label_values: 3 };
  });
  try {
    const headers = (name: string) => ({
      "content-type": "application/json",
      "x-consumer-username": name,
    });
    // Made-up names, each admitted once and refused once: past the bound, one `other` series.
    for (let i = 0; i < 8; i++) {
      for (let n = 0; n < 2; n++) {
        const res = await post(`${h.url}/v1/chat/completions`, headers(`made-up-${i}`), CHAT);
        await res.body?.cancel();
      }
    }
    const text = h.gw.metrics.expose();
    const keys = new Set([...text.matchAll(/\bkey="([^"]*)"/g)].map((m) => m[1]));
    assert.deepEqual([...keys].sort(), [
      "consumer:made-up-0",
      "consumer:made-up-1",
      "consumer:made-up-2",
      "other",
    ]);
    assert.match(text, /gateway_identity_requests_total\{key="other"\} 10/);
    assert.match(
      text,
      /gateway_limit_rejections_total\{key="other",limit="requests_per_minute"\} 5/,
    );
  } finally {
    await h.close();
  }
});

Deno.test("limits: Kong consumers from a trusted proxy need no key and get their own limits", async () => {
  const h = await limited({ requests_per_minute: 100 }, (c) => {
    c.identities = { kong_consumers: true };
    c.consumers = {
      default_limits: { requests_per_minute: 5 },
      by_name: { alice: { limits: { requests_per_minute: 1 } } },
    };
  });
  try {
    const kong = (h: Record<string, string>) => ({ "content-type": "application/json", ...h });
    const alice = await post(
      `${h.url}/v1/chat/completions`,
      kong({ "x-consumer-username": "alice" }),
      CHAT,
    );
    assert.equal(alice.status, 200);
    assert.equal(alice.headers.get("x-ratelimit-limit-requests"), "1");
    await alice.body?.cancel();
    // The consumer wins over a key sent alongside: alice's budget, not team-a's.
    const again = await post(
      `${h.url}/v1/chat/completions`,
      kong({ "x-consumer-username": "alice", authorization: `Bearer ${KEY}` }),
      CHAT,
    );
    assert.equal(again.status, 429);
    assert.match(
      (await again.json()).error.message,
      /^consumer:alice has reached its limit requests_per_minute/,
    );
    // Unknown username: the default limits; matched on the id when there is no username.
    const bob = await post(
      `${h.url}/v1/chat/completions`,
      kong({ "x-consumer-id": "bob-id" }),
      CHAT,
    );
    assert.equal(bob.headers.get("x-ratelimit-limit-requests"), "5");
    await bob.body?.cancel();
    // Kong's anonymous consumer is no identity: a key is needed.
    const anonymous = await post(
      `${h.url}/v1/chat/completions`,
      kong({ "x-consumer-username": "anon", "x-anonymous-consumer": "true" }),
      CHAT,
    );
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();
    const logs = h.logs.filter((l) => l.msg === "access" && l.status === 200);
    assert.deepEqual(logs.map((l) => [l.identity, l.key]), [["consumer:alice", undefined], [
      "consumer:bob-id",
      undefined,
    ]]);
  } finally {
    await h.close();
  }
});

Deno.test("limits: an unpriced model counts no spend and is logged once per model", async () => {
  const h = await limited({ spend_per_month_usd: 1 }, (c) => {
    c.prices = [{ models: ["msg-*"], input: 3, output: 15 }];
  });
  const warned: Record<string, unknown>[] = [];
  const error = console.error;
  console.error = (line: string) => warned.push(JSON.parse(line));
  try {
    for (const model of ["chat-text", "chat-text", "chat-think"]) {
      const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), { ...CHAT, model });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    assert.deepEqual(warned, [
      { level: "warn", msg: "unpriced model: no spend counted", model: "chat-text" },
      { level: "warn", msg: "unpriced model: no spend counted", model: "chat-think" },
    ]);
    assert.equal((await usage(h)).body.windows.spend_per_month_usd.used, 0);
  } finally {
    console.error = error;
    await h.close();
  }
});

Deno.test("limits: a Kong consumer named like a key neither reads its stored responses nor spends its budget", async () => {
  const h = await limited({ requests_per_minute: 2 }, (c) => {
    c.identities = { kong_consumers: true };
    c.consumers = { default_limits: { requests_per_minute: 5 }, by_name: {} };
  });
  try {
    const created = await post(`${h.url}/v1/responses`, openaiHeaders(), {
      model: "chat-text",
      input: "secret plan",
    });
    const { id } = await created.json();
    const asTeamA = { "content-type": "application/json", "x-consumer-username": "team-a" };
    const read = await fetch(`${h.url}/v1/responses/${id}`, { headers: asTeamA });
    assert.equal(read.status, 404);
    await read.body?.cancel();
    // Its requests count on the consumer, not on the key: the key's second request still passes.
    for (let i = 0; i < 3; i++) {
      const res = await post(`${h.url}/v1/chat/completions`, asTeamA, CHAT);
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    const own = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
    assert.equal(own.status, 200);
    assert.equal(own.headers.get("x-ratelimit-remaining-requests"), "0");
    await own.body?.cancel();
  } finally {
    await h.close();
  }
});

/** Consumer headers that must mean nothing: no access without a key, the key's own limits with one. */
async function consumerHeadersIgnored(tweak: (c: Config) => void) {
  const h = await limited({ requests_per_minute: 100 }, (c) => {
    c.consumers = { by_name: { alice: { limits: { requests_per_minute: 1000 } } } };
    tweak(c);
  });
  try {
    const forged = { "content-type": "application/json", "x-consumer-username": "alice" };
    const res = await post(`${h.url}/v1/chat/completions`, forged, CHAT);
    assert.equal(res.status, 401);
    await res.body?.cancel();
    // With a key: that key's identity and limits, not alice's.
    const keyed = await post(
      `${h.url}/v1/chat/completions`,
      { ...forged, ...openaiHeaders() },
      CHAT,
    );
    assert.equal(keyed.headers.get("x-ratelimit-limit-requests"), "100");
    await keyed.body?.cancel();
    assert.equal(h.logs.findLast((l) => l.msg === "access")!.identity, "team-a");
  } finally {
    await h.close();
  }
}

Deno.test("limits: Kong consumer headers from an untrusted peer are ignored", async () => {
  await consumerHeadersIgnored((c) => {
    c.identities = { kong_consumers: true };
    c.trusted_proxies = ["10.0.0.0/8"];
  });
});

Deno.test("limits: with kong_consumers false, consumer headers from a trusted peer mean nothing", async () => {
  await consumerHeadersIgnored((c) => {
    c.identities = { kong_consumers: false };
  });
});

Deno.test("limits: a limited identity's headers replace the provider's; resets are whole seconds, never early", async () => {
  const h = await limited({ requests_per_minute: 5, tokens_per_minute: 100 });
  try {
    const msg = await post(`${h.url}/v1/messages`, anthropicHeaders(), MESSAGES);
    assert.equal(msg.status, 200);
    await msg.body?.cancel();
    const anthropic = [...msg.headers].filter(([k]) => k.startsWith("anthropic-ratelimit-"));
    assert.deepEqual(anthropic.map(([k]) => k).sort(), [
      "anthropic-ratelimit-requests-limit",
      "anthropic-ratelimit-requests-remaining",
      "anthropic-ratelimit-requests-reset",
      "anthropic-ratelimit-tokens-limit",
      "anthropic-ratelimit-tokens-remaining",
      "anthropic-ratelimit-tokens-reset",
    ], "the provider's (its input-tokens trio too) are gone");
    assert.equal(msg.headers.get("anthropic-ratelimit-requests-limit"), "5");
    assert.equal(msg.headers.get("anthropic-ratelimit-requests-remaining"), "4");
    const reset = msg.headers.get("anthropic-ratelimit-requests-reset")!;
    assert.match(reset, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // When the window frees, rounded up to the second: never before.
    const frees = Date.parse((await usage(h)).body.windows.requests_per_minute.reset);
    assert.equal(Date.parse(reset), Math.ceil(frees / 1000) * 1000);
    assert.equal(msg.headers.get("anthropic-ratelimit-tokens-remaining"), String(100 - 18));
    const chat = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), CHAT);
    await chat.body?.cancel();
    assert.equal(chat.headers.get("x-ratelimit-limit-requests"), "5");
    assert.equal(chat.headers.get("x-ratelimit-remaining-requests"), "3");
    assert.equal(chat.headers.get("x-ratelimit-limit-tokens"), "100");
    assert.equal(chat.headers.get("x-ratelimit-remaining-tokens"), String(100 - 36));
    assert.match(chat.headers.get("x-ratelimit-reset-tokens")!, /^(1m0s|[1-5]?\ds)$/);
  } finally {
    await h.close();
  }
});

Deno.test("limits: access log carries the agent session; no limits, the provider's headers as relayed", async () => {
  const h = await startHarness();
  try {
    const res = await post(`${h.url}/v1/messages`, {
      ...anthropicHeaders(),
      "x-claude-code-session-id": "sess-1",
      "x-claude-code-agent-id": "agent-7",
    }, MESSAGES);
    assert.equal(res.headers.get("anthropic-ratelimit-requests-limit"), "4000");
    await res.body?.cancel();
    const codex = await post(`${h.url}/v1/chat/completions`, {
      ...openaiHeaders(),
      session_id: "codex-9",
    }, CHAT);
    await codex.body?.cancel();
    const [a, b] = h.logs.filter((l) => l.msg === "access");
    assert.deepEqual([a.identity, a.session_id, a.agent_id], ["team-a", "sess-1", "agent-7"]);
    assert.deepEqual([b.session_id, b.agent_id], ["codex-9", undefined]);
  } finally {
    await h.close();
  }
});

Deno.test("limits: config errors name the bad field; a config without limits is unlimited", () => {
  const base = {
    keys: [{ name: "team-a", key: KEY }],
    providers: [{ name: "demo", api: "demo" }],
    routes: [{ models: ["demo-*"], provider: "demo" }],
  };
  assert.deepEqual(validateConfig(base).keys[0], { name: "team-a", key: KEY });
  assert.throws(
    () =>
      validateConfig({
        ...base,
        keys: [{ name: "team-a", key: KEY, limits: { requests_per_hour: 5, tokens_per_day: -1 } }],
        // `output` may be left out (an embeddings model's price); a negative one may not.
        prices: [{ models: ["x-*"], input: 1 }, { models: ["y-*"], input: 1, output: -1 }],
        limits_store: { on_error: "maybe" },
        identities: { kong_consumers: "yes" },
      }),
    (e: Error) => {
      for (
        const path of [
          "keys[0].limits.requests_per_hour",
          "keys[0].limits.tokens_per_day",
          "prices[1].output",
          "limits_store.on_error",
          "identities.kong_consumers",
        ]
      ) assert.match(e.message, new RegExp(`\\n  ${path.replace(/[.[\]]/g, "\\$&")}: `), path);
      assert.match(e.message, /requests_per_hour: unknown field/);
      return true;
    },
  );
  // Consumers' identity names begin with `consumer:`: no key may take one.
  assert.throws(
    () => validateConfig({ ...base, keys: [{ name: "consumer:alice", key: KEY }] }),
    /keys\[0\]\.name: a key name may not begin with "consumer:"/,
  );
});

Deno.test("limits: a Kong consumer's WebSocket follows a reload: new limits, or no trust at all", async () => {
  const h = await limited({}, (c) => {
    c.identities = { kong_consumers: true };
    c.consumers = { by_name: { alice: { limits: { requests_per_minute: 5 } } } };
  });
  const reloadWith = (change: (c: typeof h.gw.config) => void) => {
    const next = structuredClone(h.gw.live.current.config);
    change(next);
    assert.equal(new Reloader(h.gw, () => next).reload("test").outcome, "applied");
  };
  try {
    const frame = { type: "response.create", model: "msg-text", input: "hi" };
    const alice = { "x-consumer-username": "alice" };
    const [ok, refused] = await wsExchange(h.url, [frame, () => {
      reloadWith((c) => c.consumers.by_name.alice = { limits: { requests_per_minute: 1 } });
      return frame;
    }], alice);
    assert.equal(ok.at(-1)!.type, "response.completed");
    const e = refused[0] as { type: string; error: { message: string } };
    assert.equal(e.type, "error");
    assert.match(e.error.message, /^consumer:alice has reached its limit requests_per_minute \(1 /);
    reloadWith((c) => c.consumers.by_name.alice = { limits: { requests_per_minute: 5 } });
    const [first, untrusted] = await wsExchange(h.url, [frame, () => {
      reloadWith((c) => c.identities = { kong_consumers: false });
      return frame;
    }], alice);
    assert.equal(first.at(-1)!.type, "response.completed");
    const u = untrusted[0] as { type: string; error: { message: string } };
    assert.equal(u.type, "error");
    assert.match(u.error.message, /Kong consumer identities are no longer accepted/);
  } finally {
    await h.close();
  }
});

Deno.test("limits: a Kong consumer's WebSocket needs no key; each response counts on its budget", async () => {
  const h = await limited({}, (c) => {
    c.identities = { kong_consumers: true };
    c.consumers = { by_name: { alice: { limits: { requests_per_minute: 1 } } } };
  });
  try {
    const frame = { type: "response.create", model: "msg-text", input: "hi" };
    const [ok, refused] = await wsExchange(h.url, [frame, frame], {
      "x-consumer-username": "alice",
    });
    assert.equal(ok.at(-1)!.type, "response.completed");
    const e = refused[0] as { type: string; error: { code: string; message: string } };
    assert.equal(e.type, "error");
    assert.match(e.error.message, /^consumer:alice has reached its limit requests_per_minute/);
    // A Gemini stream of the same consumer is refused before it starts, in Google's dialect.
    const gem = await post(
      `${h.url}/v1beta/models/gem-text:streamGenerateContent?alt=sse`,
      { "content-type": "application/json", "x-consumer-username": "alice" },
      GEMINI,
    );
    assert.equal(gem.status, 429);
    assert.equal((await gem.json()).error.status, "RESOURCE_EXHAUSTED");
  } finally {
    await h.close();
  }
});
