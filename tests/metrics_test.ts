/**
 * Metrics: the text exposition (HELP, TYPE, label escaping, histogram buckets), `promtool
 * check metrics` on what a gateway exposes after real traffic, the label rules (model only
 * for 2xx answers, bounded distinct values), what is billable (also in the access log), the
 * metrics listener and its config. tests/metrics_prometheus_test.ts scrapes with a real
 * Prometheus.
 */
import assert from "node:assert/strict";
import { applyListenEnv, defaultConfig, validateConfig } from "../src/config/config.ts";
import {
  Counter,
  Gauge,
  Histogram,
  Metrics,
  METRICS_CONTENT_TYPE,
  serveMetrics,
} from "../src/ops/metrics.ts";
import { Router } from "../src/request/router.ts";
import {
  anthropicHeaders,
  bodies,
  CLIENTS,
  FORMATS,
  type Harness,
  mockConfig,
  openaiHeaders,
  post,
  routeFor,
  startHarness,
} from "./helpers.ts";

export const PROMTOOL = ["/usr/bin/promtool", "/usr/local/bin/promtool"].find((p) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
});
const MISSING = "promtool not installed: run .ci/install-prometheus.sh";
if (PROMTOOL === undefined) console.warn(MISSING);

/** `promtool check metrics` on a text exposition: its exit code and complaints. */
async function promtool(text: string): Promise<{ ok: boolean; output: string }> {
  const child = new Deno.Command(PROMTOOL!, {
    args: ["check", "metrics"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  const dec = new TextDecoder();
  return { ok: out.success, output: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

/** The samples of one metric name: label set (as exposed) → value. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = line.match(/^([a-z_:]+)(\{.*\})? (\S+)$/);
    if (m && m[1] === name) out.set(m[2] ?? "", Number(m[3]));
  }
  return out;
}

Deno.test("metrics exposition: HELP, TYPE, escaped labels, cumulative buckets", () => {
  const c = new Counter("things_total", "Things\\counted\nhere.", ["a", "b"]);
  c.add(['say "hi"', "back\\slash\nnewline"], 2);
  c.add(["x", ""]);
  c.add(["x", ""], 0.5);
  assert.equal(
    c.expose(),
    [
      "# HELP things_total Things\\\\counted\\nhere.",
      "# TYPE things_total counter",
      'things_total{a="say \\"hi\\"",b="back\\\\slash\\nnewline"} 2',
      // An empty value is left out: Prometheus reads it as no label.
      'things_total{a="x"} 1.5',
      "",
    ].join("\n"),
  );
  const h = new Histogram("wait_seconds", "Waits.", ["op"], [0.1, 1]);
  h.observe(["a"], 0.05);
  h.observe(["a"], 0.5);
  h.observe(["a"], 7);
  assert.equal(
    h.expose(),
    [
      "# HELP wait_seconds Waits.",
      "# TYPE wait_seconds histogram",
      'wait_seconds_bucket{op="a",le="0.1"} 1',
      'wait_seconds_bucket{op="a",le="1"} 2',
      'wait_seconds_bucket{op="a",le="+Inf"} 3',
      'wait_seconds_sum{op="a"} 7.55',
      'wait_seconds_count{op="a"} 3',
      "",
    ].join("\n"),
  );
  const g = new Gauge("open_things", "Open now.");
  g.add(2);
  g.add(-1);
  assert.equal(
    g.expose(),
    "# HELP open_things Open now.\n# TYPE open_things gauge\nopen_things 1\n",
  );
});

Deno.test("metrics sum (workers): threads' snapshots add up; a dead thread's gauges do not", () => {
  const thread = new Metrics();
  thread.requests.add(["/v1/chat/completions", "r", "p", "200", "relay"], 3);
  thread.duration.observe(["chat", "openai", "m", ""], 0.05);
  thread.activeStreams.add(2);
  // As posted between threads: a structured clone.
  const snapshot = structuredClone(thread.snapshot());
  const sum = new Metrics();
  sum.absorb(snapshot);
  sum.absorb(snapshot);
  const text = sum.expose();
  assert.match(text, /^gateway_requests_total\{.*status="200".*\} 6$/m);
  assert.match(text, /^gen_ai_client_operation_duration_seconds_count\{.*\} 2$/m);
  assert.match(text, /^gateway_active_streams 4$/m);
  const retired = new Metrics();
  retired.absorb(snapshot, { gauges: false });
  assert.match(retired.expose(), /^gateway_requests_total\{.*\} 3$/m);
  assert.match(retired.expose(), /^gateway_active_streams 0$/m, "its streams ended with it");
});

Deno.test({
  name: "metrics exposition: promtool accepts what a gateway exposes after traffic",
  ignore: PROMTOOL === undefined,
  async fn() {
    // Made-up label text must come out escaped, not break the format.
    const h = await startHarness();
    try {
      for (const c of CLIENTS) {
        for (const stream of [false, true]) {
          const res = await post(
            h.url + c.path(c.model, stream),
            c.headers,
            c.body(c.model, stream),
          );
          await res.text();
        }
      }
      const odd = 'chat-text "quoted" \\ back\nline';
      const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat(odd));
      assert.equal(res.status, 200);
      await res.text();
      const text = h.gw.metrics.expose();
      assert.ok(text.includes('model="chat-text \\"quoted\\" \\\\ back\\nline"'), text);
      const { ok, output } = await promtool(text);
      assert.ok(ok, output);
      // The same text with the quotes left unescaped is refused: the check can fail.
      const unescaped = text.replaceAll('\\"quoted\\"', '"quoted"');
      assert.notEqual(unescaped, text);
      assert.equal((await promtool(unescaped)).ok, false);
    } finally {
      await h.close();
    }
  },
});

/** Sends one request and reads its body. */
async function send(h: Harness, path: string, headers: Record<string, string>, body: unknown) {
  const res = await post(h.url + path, headers, body);
  return { status: res.status, json: JSON.parse(await res.text()) };
}

Deno.test("metrics labels: model only for 2xx answers, bounded distinct values, route names", async () => {
  const h = await startHarness({
    tweak(config) {
      config.metrics = { hostname: "127.0.0.1", port: 0, max_label_values: 2 };
      routeFor(config, "chat-*").name = "chat-route";
    },
  });
  try {
    for (const model of ["chat-text", "chat-tool", "chat-think", "chat-err429"]) {
      await send(h, "/v1/chat/completions", openaiHeaders(), bodies.chat(model));
    }
    const text = h.gw.metrics.expose();
    const tokens = samples(text, "gateway_tokens_total");
    assert.equal(
      tokens.get(
        '{key="team-a",route="chat-route",provider="oai-chat",model="chat-text",type="input",billable="true"}',
      ),
      11,
    );
    assert.equal(
      tokens.get(
        '{key="team-a",route="chat-route",provider="oai-chat",model="chat-tool",type="input",billable="true"}',
      ),
      11,
    );
    // The third distinct model is past the bound of 2.
    assert.equal(
      tokens.get(
        '{key="team-a",route="chat-route",provider="oai-chat",model="other",type="output",billable="true"}',
      ),
      12,
    );
    const details = samples(text, "gateway_token_details_total");
    assert.equal(
      details.get(
        '{key="team-a",route="chat-route",provider="oai-chat",model="other",type="reasoning"}',
      ),
      5,
    );
    assert.equal(
      details.get(
        '{key="team-a",route="chat-route",provider="oai-chat",model="chat-text",type="cache_read"}',
      ),
      3,
    );
    // The 429 names no model anywhere, and is counted with its error type.
    assert.ok(!text.includes("chat-err429"));
    const durations = samples(text, "gen_ai_client_operation_duration_seconds_count");
    assert.equal(
      durations.get(
        '{gen_ai_operation_name="chat",gen_ai_provider_name="openai",error_type="rate_limit"}',
      ),
      1,
    );
    const requests = samples(text, "gateway_requests_total");
    assert.equal(
      requests.get(
        '{endpoint="chat",route="chat-route",provider="oai-chat",status="429",mode="relay"}',
      ),
      1,
    );
    assert.equal(
      samples(text, "gateway_upstream_attempts_total").get(
        '{provider="oai-chat",outcome="rate_limited"}',
      ),
      1,
    );
    // A route without a name is labelled with its first model pattern.
    await send(h, "/v1/messages", anthropicHeaders(), bodies.messages("msg-text"));
    const after = samples(h.gw.metrics.expose(), "gateway_requests_total");
    assert.equal(
      after.get(
        '{endpoint="messages",route="msg-*",provider="anthropic",status="200",mode="relay"}',
      ),
      1,
    );
  } finally {
    await h.close();
  }
});

Deno.test("metrics off: a gateway without a metrics listener collects nothing, and still logs", async () => {
  const h = await startHarness({ tweak: (config) => delete config.metrics });
  try {
    await send(h, "/v1/chat/completions", openaiHeaders(), bodies.chat("chat-text"));
    await send(h, "/v1/messages", anthropicHeaders(), bodies.messages("msg-text"));
    assert.equal(samples(h.gw.metrics.expose(), "gateway_requests_total").size, 0);
    assert.equal(samples(h.gw.metrics.expose(), "gateway_tokens_total").size, 0);
    // The access log is another observer: it still sees both requests, usage included.
    const lines = h.logs.filter((l) => l.msg === "access");
    assert.deepEqual(lines.map((l) => [l.status, l.input_tokens]), [[200, 11], [200, 11]]);
  } finally {
    await h.close();
  }
});

Deno.test("metrics and access log: compaction and token counting are not billable", async () => {
  const h = await startHarness();
  try {
    await send(h, "/v1/responses/compact", openaiHeaders(), {
      model: "pt-text",
      input: [{ role: "user", content: "hello" }],
    });
    const count = await send(h, "/v1/messages/count_tokens", anthropicHeaders(), {
      model: "msg-text",
      messages: [{ role: "user", content: "count me" }],
    });
    const n = count.json.input_tokens as number;
    assert.ok(n > 0);
    // Codex's in-band compaction on a converted route; the same input on a relay is billed.
    const trigger = [{ role: "user", content: "hi" }, { type: "compaction_trigger" }];
    await send(h, "/v1/responses", openaiHeaders(), { model: "msg-text", input: trigger });
    await send(h, "/v1/responses", openaiHeaders(), { model: "msg-text", input: "hi" });

    const [compact, counted, inband, billed] = h.logs.filter((l) => l.msg === "access");
    assert.deepEqual(
      [compact, counted, inband, billed].map((l) => [l.endpoint, l.billable]),
      [["responses_compact", false], ["count_tokens", false], ["responses", false], [
        "responses",
        true,
      ]],
    );
    assert.deepEqual(
      {
        input: compact.input_tokens,
        output: compact.output_tokens,
        cacheRead: compact.cache_read_tokens,
        cacheWrite: compact.cache_write_tokens,
        reasoning: compact.reasoning_tokens,
      },
      { input: 11, output: 7, cacheRead: 3, cacheWrite: 2, reasoning: 0 },
    );
    assert.equal(counted.input_tokens, n);
    assert.equal(counted.output_tokens, 0);

    const text = h.gw.metrics.expose();
    const tokens = samples(text, "gateway_tokens_total");
    const sum = (filter: RegExp) =>
      [...tokens].filter(([k]) => filter.test(k)).reduce((a, [, v]) => a + v, 0);
    assert.equal(sum(/billable="false"/), 11 + 7 + n + 11 + 7);
    assert.equal(sum(/billable="true"/), 11 + 7);
    const usage = samples(text, "gen_ai_client_token_usage_sum");
    assert.equal(
      usage.get(
        '{gen_ai_operation_name="count_tokens",gen_ai_provider_name="anthropic",gen_ai_request_model="msg-text",gen_ai_token_type="input"}',
      ),
      n,
    );
    // Counting produces no output tokens, so there is no output series for it.
    assert.ok(![...usage.keys()].some((k) => k.includes("count_tokens") && k.includes("output")));
    assert.equal(
      usage.get(
        '{gen_ai_operation_name="compact",gen_ai_provider_name="openai",gen_ai_request_model="pt-text",gen_ai_token_type="output"}',
      ),
      7,
    );
  } finally {
    await h.close();
  }
});

Deno.test("metrics gauges: active streams and WebSockets go up and back down", async () => {
  const h = await startHarness();
  const gauge = (name: string) => samples(h.gw.metrics.expose(), name).get("");
  try {
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), {
      ...bodies.chat("chat-slow-text", true),
    });
    const reader = res.body!.getReader();
    await reader.read();
    assert.equal(gauge("gateway_active_streams"), 1);
    while (!(await reader.read()).done);
    assert.equal(gauge("gateway_active_streams"), 0);

    const ws = new WebSocket(h.url.replace("http", "ws") + "/v1/responses", {
      headers: { authorization: openaiHeaders().authorization },
    });
    await new Promise((r) => ws.onopen = r);
    for (let i = 0; i < 50 && gauge("gateway_active_websockets") !== 1; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(gauge("gateway_active_websockets"), 1);
    const closed = new Promise((r) => ws.onclose = r);
    ws.close();
    await closed;
    for (let i = 0; i < 50 && gauge("gateway_active_websockets") !== 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(gauge("gateway_active_websockets"), 0);
  } finally {
    await h.close();
  }
});

Deno.test("metrics listener: GET /metrics in the text format, nothing else", async () => {
  const metrics = new Metrics();
  const { promise, resolve } = Promise.withResolvers<Deno.NetAddr>();
  const server = serveMetrics(
    metrics,
    { hostname: "127.0.0.1", port: 0, max_label_values: 9 },
    resolve,
  );
  try {
    const { port } = await promise;
    assert.ok(port > 0, "port 0 takes a free port");
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(res.headers.get("content-type"), METRICS_CONTENT_TYPE);
    assert.match(await res.text(), /^# TYPE gateway_active_websockets gauge$/m);
    const other = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`);
    assert.equal(other.status, 404);
    await other.body?.cancel();
    const post = await fetch(`http://127.0.0.1:${port}/metrics`, { method: "POST" });
    assert.equal(post.status, 405);
    await post.body?.cancel();
  } finally {
    await server.shutdown();
  }
});

Deno.test("metrics config: off when absent, on by default, METRICS_PORT overrides", async () => {
  const config = await mockConfig("http://127.0.0.1:1");
  assert.equal(config.metrics, undefined);
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  const builtIn = defaultConfig(env({ GATEWAY_API_KEYS: "sk-one-key-123" }), FORMATS);
  assert.deepEqual(builtIn.metrics, { hostname: "127.0.0.1", port: 9464, max_label_values: 1000 });
  assert.equal(applyListenEnv(builtIn, env({ METRICS_PORT: "off" })).metrics, undefined);
  // Kong proxies to the API port only (tests/kong_config_test.ts checks its routes).
  const kong = await Deno.readTextFile(new URL("../kong.yml", import.meta.url));
  assert.doesNotMatch(kong, /9464/);
  assert.deepEqual([...kong.matchAll(/target: \S+:(\d+)/g)].map((m) => m[1]), [
    "8080",
    "8080",
    "8080",
  ]);
  assert.deepEqual(applyListenEnv(config, env({ METRICS_PORT: "0" })).metrics, {
    hostname: "127.0.0.1",
    port: 0,
    max_label_values: 1000,
  });
  assert.equal(applyListenEnv(builtIn, env({ METRICS_PORT: "9999" })).metrics?.port, 9999);
  for (const bad of ["no", "70000", "-1"]) {
    assert.throws(() => applyListenEnv(config, env({ METRICS_PORT: bad })), /METRICS_PORT/);
  }
  const named = validateConfig({
    ...config,
    routes: [{ name: "team chat", models: ["chat-*"], provider: "oai-chat" }],
  });
  assert.equal(new Router(named).resolve("chat-x").name, "team chat");
  assert.throws(
    () => validateConfig({ ...config, metrics: { port: 9464, extra: 1 } }),
    /metrics\.extra: unknown field/,
  );
});

Deno.test("metrics listener: a taken port stops main.ts at startup, naming METRICS_PORT", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-net", "--allow-env", "--allow-read", "main.ts"],
      cwd: new URL("..", import.meta.url).pathname,
      env: {
        GATEWAY_API_KEYS: "sk-metrics-port-test",
        PORT: "0",
        METRICS_PORT: String((taken.addr as Deno.NetAddr).port),
        NO_COLOR: "1",
      },
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 2);
    assert.match(new TextDecoder().decode(out.stderr), /cannot serve metrics on .*METRICS_PORT/);
  } finally {
    taken.close();
  }
});
