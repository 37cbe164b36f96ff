/**
 * `deno task bench`: what the gateway costs, as ratios against calling the mock provider
 * directly in the same run. Requests run one at a time (a gateway hop is latency, not
 * throughput); each case reports the median and p99 of whole-request time and its ratio to
 * the baseline. The demo provider is the zero-upstream case: pure gateway overhead.
 */
import {
  anthropicHeaders,
  bodies,
  type Harness,
  openaiHeaders,
  post,
  startHarness,
} from "../tests/helpers.ts";

const WARMUP = 200;
const ITERATIONS = Number(Deno.env.get("BENCH_ITERATIONS") ?? 2000);

interface Case {
  name: string;
  url: (h: Harness) => string;
  headers: Record<string, string>;
  body: unknown;
}

const chat = (model: string, stream: boolean) => ({
  ...bodies.chat(model, stream),
  ...(stream && { stream_options: { include_usage: true } }),
});

function cases(stream: boolean): Case[] {
  const viaGateway = (h: Harness) => `${h.url}/v1/chat/completions`;
  return [
    {
      name: "mock provider directly (baseline)",
      url: (h) => `${h.upstream.url}/v1/chat/completions`,
      headers: openaiHeaders(),
      body: chat("chat-text", stream),
    },
    {
      name: "gateway passthrough (chat → chat)",
      url: viaGateway,
      headers: openaiHeaders(),
      body: chat("chat-text", stream),
    },
    {
      name: "gateway converted (chat → messages)",
      url: viaGateway,
      headers: openaiHeaders(),
      body: chat("msg-text", stream),
    },
    {
      name: "gateway converted (messages → chat)",
      url: (h) => `${h.url}/v1/messages`,
      headers: anthropicHeaders(),
      body: bodies.messages("chat-text", stream),
    },
    {
      name: "gateway demo provider (no upstream)",
      url: viaGateway,
      headers: openaiHeaders(),
      body: chat("demo-x", stream),
    },
  ];
}

async function timeOne(url: string, c: Case): Promise<number> {
  const started = performance.now();
  const res = await post(url, c.headers, c.body);
  if (res.status !== 200) throw new Error(`${c.name}: HTTP ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return performance.now() - started;
}

async function measure(h: Harness, c: Case): Promise<{ median: number; p99: number }> {
  const url = c.url(h);
  for (let i = 0; i < WARMUP; i++) await timeOne(url, c);
  const times: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) times.push(await timeOne(url, c));
  times.sort((a, b) => a - b);
  return {
    median: times[Math.floor(times.length / 2)],
    p99: times[Math.floor(times.length * 0.99)],
  };
}

const h = await startHarness();
try {
  for (const stream of [false, true]) {
    console.log(`\n${stream ? "stream" : "json"} (${ITERATIONS} sequential requests each)`);
    let baseline = 0;
    for (const c of cases(stream)) {
      const { median, p99 } = await measure(h, c);
      baseline ||= median;
      const ratio = (median / baseline).toFixed(2);
      console.log(
        `  ${c.name.padEnd(40)} median ${median.toFixed(3)} ms  p99 ${
          p99.toFixed(3)
        } ms  ${ratio}x`,
      );
    }
  }
} finally {
  await h.close();
}
