/**
 * Metrics end to end: a real Prometheus (Debian's) scrapes a running gateway (main.ts as its
 * own process, metrics on port 0) every second while traffic goes through every endpoint —
 * relayed and converted, streams and not, the WebSocket, compact and count_tokens. Prometheus's
 * HTTP API must then report exactly the mock provider's usage: the token sums, the tokens
 * that are not billable (compaction and token counting, nothing else), and the relayed
 * streams' tokens. The PromQL examples of docs/metrics.md run against the same data. Ignored
 * with a message when prometheus is missing (.ci/install-prometheus.sh installs it).
 */
import assert from "node:assert/strict";
import {
  anthropicHeaders,
  bodies,
  FORMATS,
  HASHED_KEY,
  INGRESS,
  KEY,
  MOCK_PROVIDERS,
  mockConfig,
  openaiHeaders,
  post,
  routeFor,
  wsExchange,
} from "./helpers.ts";
import { startMockUpstream, TOKENS } from "./mock/upstream.ts";
import { type Child, type GatewayProcess, startGateway } from "./process.ts";
import { MISSING, PROMETHEUS, query, startPrometheus } from "./prometheus.ts";

if (PROMETHEUS === undefined) console.warn(MISSING);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A `sum by (label)` query as {label value: sum}. */
async function sumBy(prom: string, label: string, selector: string) {
  const rows = await query(prom, `sum by (${label}) (${selector})`);
  return Object.fromEntries(rows.map((r) => [r.metric[label] ?? "", r.value]));
}

/** Waits until a query's single value is `want` (Prometheus scrapes every second). */
async function until(prom: string, promql: string, want: number): Promise<void> {
  let last: unknown;
  for (let i = 0; i < 100; i++) {
    const rows = await query(prom, promql);
    last = rows.map((r) => r.value);
    if (rows.length === 1 && rows[0].value === want) return;
    await sleep(200);
  }
  assert.fail(`${promql}: expected ${want}, Prometheus says ${JSON.stringify(last)}`);
}

/** Adds up the tokens the mock reports for the requests sent. */
class Expected {
  input = 0;
  output = 0;
  add(input: number, output: number) {
    this.input += input;
    this.output += output;
  }
  /** A generation answered with the mock's usage (`think` adds reasoning to the output). */
  reply(think = false) {
    this.add(TOKENS.input, TOKENS.text + (think ? TOKENS.reasoning : 0));
  }
  get byType() {
    return { input: this.input, output: this.output };
  }
}

async function ok(res: Response, what: string): Promise<string> {
  const text = await res.text();
  assert.equal(res.status, 200, `${what}: ${text.slice(0, 300)}`);
  return text;
}

Deno.test({
  name: "metrics: a real Prometheus scraping the gateway sees exactly the provider's usage",
  ignore: PROMETHEUS === undefined,
  async fn() {
    const upstream = await startMockUpstream();
    const dir = await Deno.makeTempDir({ prefix: "gateway-prometheus-" });
    const config = await mockConfig(upstream.url);
    config.metrics = { hostname: "127.0.0.1", port: 0, max_label_values: 1000 };
    routeFor(config, "pt-*").name = "openai-relay";
    let gateway: GatewayProcess | undefined;
    let prometheus: Child | undefined;
    try {
      gateway = await startGateway(config, dir);
      const gw = gateway.url;
      const metricsPort = gateway.metricsPort!;
      assert.notEqual(new URL(gw).port, String(metricsPort));

      // The scrape config docs/metrics.md gives, at one second.
      const started = await startPrometheus(dir, metricsPort);
      prometheus = started.child;
      const prom = started.url;
      await until(prom, 'up{job="llm-gateway"}', 1);

      const all = new Expected();
      const notBillable = new Expected();
      const relayedStreams = new Expected();

      // Relayed, not streamed (key team-a), and streamed (key team-b, to find them again).
      for (const c of INGRESS) {
        await ok(
          await post(gw + c.path(c.model, false), c.headers, c.body(c.model, false)),
          c.name,
        );
        all.reply();
        const teamB = Object.fromEntries(
          Object.entries(c.headers).map(([k, v]) => [k, v.replace(KEY, HASHED_KEY)]),
        );
        await ok(await post(gw + c.path(c.model, true), teamB, c.body(c.model, true)), c.name);
        all.reply();
        relayedStreams.reply();
      }
      // Converted, streamed and not, reasoning included.
      const [chat, responses, messages, gemini] = INGRESS;
      for (
        const [c, model, stream] of [
          [chat, "msg-think", true],
          [messages, "gem-text", false],
          [gemini, "chat-think", true],
          [responses, "msg-text", true],
          [chat, "resp-text", false],
        ] as const
      ) {
        await ok(await post(gw + c.path(model, stream), c.headers, c.body(model, stream)), model);
        all.reply(model.includes("think"));
      }
      // Codex's in-band compaction on a converted route (HTTP): not billable.
      const trigger = [{ role: "user", content: "hi" }, { type: "compaction_trigger" }];
      await ok(
        await post(gw + "/v1/responses", openaiHeaders(), { model: "gem-text", input: trigger }),
        "trigger",
      );
      all.reply();
      notBillable.reply();
      // The WebSocket: a relayed response, a converted one, and the in-band compaction.
      const ws = await wsExchange(gw, [
        { type: "response.create", model: "pt-text", input: "hi" },
        { type: "response.create", model: "msg-text", input: "hi", store: false },
        { type: "response.create", model: "msg-text", input: trigger, store: false },
      ]);
      assert.deepEqual(ws.map((r) => r.at(-1)!.type), Array(3).fill("response.completed"));
      all.reply();
      all.reply();
      all.reply();
      notBillable.reply();
      // Endpoint 4 (compact) and endpoint 8 (count_tokens): not billable.
      await ok(
        await post(gw + "/v1/responses/compact", openaiHeaders(), {
          model: "pt-text",
          input: [{ role: "user", content: "hello" }],
        }),
        "compact",
      );
      all.reply();
      notBillable.reply();
      const counted = JSON.parse(
        await ok(
          await post(gw + "/v1/messages/count_tokens", anthropicHeaders(), {
            model: "msg-text",
            messages: [{ role: "user", content: "count me" }],
          }),
          "count_tokens",
        ),
      ).input_tokens as number;
      assert.ok(counted > 0);
      all.add(counted, 0);
      notBillable.add(counted, 0);
      // A rate-limited call (no tokens) and a stream the upstream cut, whose tokens are the
      // gateway's estimate (docs/limits.md, "A cut answer"): read back from its own /metrics.
      const limited = await post(
        gw + "/v1/chat/completions",
        openaiHeaders(),
        bodies.chat("chat-err429"),
      );
      assert.equal(limited.status, 429);
      await limited.body?.cancel();
      const cut = await post(
        gw + "/v1/chat/completions",
        openaiHeaders(),
        bodies.chat("chat-cut", true),
      );
      await cut.text();
      const own = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const estimated = { input: 0, output: 0 };
      for (
        const [, type, n] of own.matchAll(
          /^gateway_tokens_total\{[^}]*model="chat-cut"[^}]*type="(input|output)"[^}]*\} (\d+)$/gm,
        )
      ) {
        estimated[type as "input" | "output"] += Number(n);
      }
      assert.ok(estimated.input > 0 && estimated.output > 0, JSON.stringify(estimated));
      all.add(estimated.input, estimated.output);

      // A socket held open shows in the gauge; once closed it is gone again.
      const open = new WebSocket(gw.replace("http", "ws") + "/v1/responses", {
        headers: { authorization: `Bearer ${KEY}` },
      });
      await new Promise((r) => open.onopen = r);
      await until(prom, "gateway_active_websockets", 1);
      const closed = new Promise((r) => open.onclose = r);
      open.close();
      await closed;
      await until(prom, "gateway_active_websockets", 0);
      await until(prom, "sum(gateway_tokens_total)", all.input + all.output);

      const tokens = "gateway_tokens_total";
      const reply = TOKENS.input + TOKENS.text;
      // The Gemini endpoint: relayed twice, converted once (with reasoning).
      const geminiTokens = 3 * reply + TOKENS.reasoning;
      assert.deepEqual(await sumBy(prom, "type", tokens), all.byType, "all tokens");
      assert.deepEqual(
        await sumBy(prom, "type", `${tokens}{billable="false"}`),
        notBillable.byType,
        "exactly compaction and token counting are not billable",
      );
      assert.deepEqual(
        await sumBy(prom, "type", `${tokens}{billable="true"}`),
        { input: all.input - notBillable.input, output: all.output - notBillable.output },
      );
      assert.deepEqual(
        await sumBy(prom, "type", `${tokens}{key="team-b"}`),
        relayedStreams.byType,
        "the relayed streams' tokens",
      );
      // The OpenTelemetry histogram holds the same totals, per operation.
      assert.deepEqual(
        await sumBy(prom, "gen_ai_token_type", "gen_ai_client_token_usage_sum"),
        all.byType,
      );
      assert.deepEqual(
        await sumBy(prom, "gen_ai_operation_name", "gen_ai_client_token_usage_sum"),
        {
          chat: all.input + all.output - counted - reply - geminiTokens,
          generate_content: geminiTokens,
          compact: reply,
          count_tokens: counted,
        },
      );
      const details = await sumBy(prom, "type", "gateway_token_details_total");
      assert.equal(details.reasoning, 2 * TOKENS.reasoning);
      assert.ok(details.cache_read > 0 && details.cache_write > 0);
      // Streams by provider API: relayed (one per format, under its provider's name), converted
      // (chat → Anthropic, Gemini → OpenAI, Responses → Anthropic), WebSocket (1 OpenAI, 2
      // Anthropic), the cut one (OpenAI).
      const streams: Record<string, number> = { openai: 3, anthropic: 4 };
      for (const c of INGRESS) {
        const system = FORMATS.get(c.name)!.system;
        streams[system] = (streams[system] ?? 0) + 1;
      }
      assert.deepEqual(
        await sumBy(
          prom,
          "gen_ai_provider_name",
          "gen_ai_client_operation_time_to_first_chunk_seconds_count",
        ),
        streams,
      );
      assert.deepEqual(
        await sumBy(prom, "outcome", 'gateway_upstream_attempts_total{provider="oai-chat"}'),
        { ok: 3, rate_limited: 1, interrupted: 1 },
      );
      assert.deepEqual(await sumBy(prom, "dialect", "gateway_stream_interruptions_total"), {
        openai: 1,
      });
      assert.deepEqual(
        await sumBy(prom, "status", 'gateway_requests_total{endpoint="responses_ws"}'),
        {
          "101": 2,
          "200": 3,
        },
      );
      assert.equal(
        (await query(
          prom,
          'gateway_requests_total{route="openai-relay",mode="relay",status="200"}',
        )).length > 0,
        true,
      );
      // The queries of docs/metrics.md run and group as the text says.
      const docs = await Deno.readTextFile(new URL("../docs/metrics.md", import.meta.url));
      const examples = [...docs.matchAll(/```promql\n(.*?)\n```/gs)].map((m) => m[1]);
      assert.equal(examples.length, 3);
      const groups = await Promise.all(examples.map(async (q) => {
        const rows = await query(prom, q);
        return rows.map((r) => Object.values(r.metric).join("/")).sort();
      }));
      assert.deepEqual(groups, [
        ["team-a/input", "team-a/output", "team-b/input", "team-b/output"],
        Object.keys(streams).sort(),
        MOCK_PROVIDERS.map((p) => p.name).sort(),
      ]);
      // The failed call's model names no series.
      assert.deepEqual(await query(prom, '{gen_ai_request_model="chat-err429"}'), []);
      assert.deepEqual(await query(prom, "gateway_active_streams"), [
        {
          metric: {
            __name__: "gateway_active_streams",
            instance: `127.0.0.1:${metricsPort}`,
            job: "llm-gateway",
          },
          value: 0,
        },
      ]);
    } finally {
      await prometheus?.stop();
      await gateway?.stop();
      await upstream.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
