/** A real Prometheus (Debian's) scraping a gateway's metrics listener every second. */
import assert from "node:assert/strict";
import { type Child, freePort, installed, spawn } from "./process.ts";

export const PROMETHEUS = installed(["/usr/bin/prometheus", "/usr/local/bin/prometheus"]);
export const MISSING = "prometheus not installed: run .ci/install-prometheus.sh";

/** One instant query against Prometheus's HTTP API: each series' labels and value. */
export async function query(
  prom: string,
  promql: string,
): Promise<{ metric: Record<string, string>; value: number }[]> {
  const res = await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = await res.json();
  assert.equal(body.status, "success", `${promql}: ${JSON.stringify(body)}`);
  return body.data.result.map((r: { metric: Record<string, string>; value: [number, string] }) => ({
    metric: r.metric,
    value: Number(r.value[1]),
  }));
}

/** Starts Prometheus in `dir` scraping 127.0.0.1:`metricsPort` every second (docs/metrics.md). */
export async function startPrometheus(
  dir: string,
  metricsPort: number,
): Promise<{ child: Child; url: string }> {
  await Deno.writeTextFile(
    `${dir}/prometheus.yml`,
    [
      "global:",
      "  scrape_interval: 1s",
      "  scrape_timeout: 1s",
      "scrape_configs:",
      "  - job_name: llm-gateway",
      "    static_configs:",
      `      - targets: ["127.0.0.1:${metricsPort}"]`,
      "",
    ].join("\n"),
  );
  const promPort = freePort();
  const child = spawn(PROMETHEUS!, [
    `--config.file=${dir}/prometheus.yml`,
    `--storage.tsdb.path=${dir}/data`,
    `--web.listen-address=127.0.0.1:${promPort}`,
  ]);
  await child.wait(/Server is ready to receive web requests/, "prometheus");
  return { child, url: `http://127.0.0.1:${promPort}` };
}
