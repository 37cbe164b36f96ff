/**
 * Retries stay the gateway's own (issue 25, point 3): every upstream send is one the retry
 * policy decided and counted, hints from upstream are bounded, and a provider-wide 429 moves on
 * to the next target.
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config.ts";
import { validateConfig } from "../src/config.ts";
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
