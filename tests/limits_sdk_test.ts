/**
 * The published SDKs' own retry logic against a gateway limit: refused with 429 and
 * `retry-after`, the openai and anthropic SDKs wait that long and retry, and the retry gets
 * through once the window frees (a 1.5 s sliding window, set through the gateway's module API).
 */
import assert from "node:assert/strict";
import { MemoryLimitStore } from "../src/state/limits/store.ts";
import { Anthropic, OpenAI } from "./sdk/deps.ts";
import { type Harness, KEY, startHarness } from "./helpers.ts";

const limitedHarness = () =>
  startHarness({
    limitStore: new MemoryLimitStore(1500),
    tweak: (c) => void (c.keys[0] = { ...c.keys[0], limits: { requests_per_minute: 1 } }),
  });

const rejections = (h: Harness) =>
  h.gw.metrics.limitRejections.expose().match(/^gateway_limit_rejections_total\{.*\} (\d+)$/m)?.[1];

Deno.test("limits + openai SDK: the SDK waits for retry-after and its retry gets through", async () => {
  const h = await limitedHarness();
  try {
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 2 });
    const ask = () =>
      client.chat.completions.create({
        model: "chat-text",
        messages: [{ role: "user", content: "hi" }],
      });
    await ask();
    const started = performance.now();
    const second = await ask();
    const waited = performance.now() - started;
    assert.equal(second.object, "chat.completion");
    assert.equal(rejections(h), "1", "refused once, then admitted on the retry");
    assert.ok(waited >= 1000, `retried after ${Math.round(waited)} ms (retry-after: 2)`);
  } finally {
    await h.close();
  }
});

Deno.test("limits + anthropic SDK: the SDK waits for retry-after and its retry gets through", async () => {
  const h = await limitedHarness();
  try {
    const client = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 2 });
    const ask = () =>
      client.messages.create({
        model: "msg-text",
        max_tokens: 50,
        messages: [{ role: "user", content: "hi" }],
      });
    await ask();
    const started = performance.now();
    const second = await ask();
    const waited = performance.now() - started;
    assert.equal(second.type, "message");
    assert.equal(rejections(h), "1");
    assert.ok(waited >= 1000, `retried after ${Math.round(waited)} ms`);
  } finally {
    await h.close();
  }
});

Deno.test("limits + openai SDK without retries: the refusal as a RateLimitError with its code", async () => {
  const h = await limitedHarness();
  try {
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({
        model: "chat-text",
        messages: [{ role: "user", content: "hi" }],
      });
    await ask();
    await assert.rejects(ask(), (e: unknown) => {
      assert.ok(e instanceof OpenAI.RateLimitError);
      assert.equal(e.code, "rate_limit_exceeded");
      assert.match(e.message, /requests_per_minute/);
      return true;
    });
  } finally {
    await h.close();
  }
});
