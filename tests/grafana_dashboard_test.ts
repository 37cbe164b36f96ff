/**
 * docs/grafana-dashboard.json against a real Prometheus scraping a gateway process: after
 * traffic (priced answers, a limit refusal), every panel's PromQL parses and returns series.
 * Ignored with a message when prometheus is missing (.ci/install-prometheus.sh).
 */
import assert from "node:assert/strict";
import { mockConfig, openaiHeaders, post } from "./helpers.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { type Child, type GatewayProcess, startGateway } from "./process.ts";
import { MISSING, PROMETHEUS, query, startPrometheus } from "./prometheus.ts";

if (PROMETHEUS === undefined) console.warn(MISSING);

interface Panel {
  title: string;
  targets: { expr: string }[];
}

const dashboard = JSON.parse(
  await Deno.readTextFile(new URL("../docs/grafana-dashboard.json", import.meta.url)),
) as { panels: Panel[] };

Deno.test({
  name: "grafana dashboard: every panel's query parses and returns series after traffic",
  ignore: PROMETHEUS === undefined,
  async fn() {
    const upstream = await startMockUpstream();
    const dir = await Deno.makeTempDir({ prefix: "gateway-grafana-" });
    const config = await mockConfig(upstream.url);
    config.metrics = { hostname: "127.0.0.1", port: 0, max_label_values: 1000 };
    config.keys[0] = { ...config.keys[0], limits: { requests_per_minute: 3 } };
    config.prices = [{ models: ["chat-*"], input: 1, output: 2 }];
    let gateway: GatewayProcess | undefined;
    let prometheus: Child | undefined;
    try {
      gateway = await startGateway(config, dir);
      const started = await startPrometheus(dir, gateway.metricsPort!);
      prometheus = started.child;
      const chat = { model: "chat-text", messages: [{ role: "user", content: "hi" }] };
      // Traffic spread over a few scrapes, so rate() and increase() have two samples or more.
      const statuses = [];
      for (let i = 0; i < 4; i++) {
        const res = await post(`${gateway.url}/v1/chat/completions`, openaiHeaders(), chat);
        await res.body?.cancel();
        statuses.push(res.status);
        await new Promise((r) => setTimeout(r, 1000));
      }
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => [p.title, t.expr]));
      assert.ok(exprs.length >= 8);
      for (const [title, expr] of exprs) {
        let rows: unknown[] = [];
        for (let i = 0; i < 50 && rows.length === 0; i++) {
          rows = await query(started.url, expr);
          if (rows.length === 0) await new Promise((r) => setTimeout(r, 200));
        }
        assert.ok(rows.length > 0, `${title}: ${expr} returned no series`);
        if (title.startsWith("Prompt cache")) {
          // The same ratio of the counters themselves (the rates may all be 0 by now): the mock
          // reads 3 of its 11 input tokens from the cache (tests/mock/scenario.ts).
          const [row] = await query(started.url, expr.replace(/rate\((.*?)\[5m\]\)/g, "$1"));
          assert.deepEqual([row.metric.route, row.metric.model], ["chat-*", "chat-text"]);
          assert.ok(Math.abs(row.value - 3 / 11) < 1e-9, `${title}: ${row.value}`);
        }
      }
    } finally {
      await prometheus?.stop();
      await gateway?.stop();
      await upstream.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
