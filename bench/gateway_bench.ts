/**
 * `deno task bench`: the gateway against the floor, in one run on loopback. Each server runs in
 * its own process: the mock provider, a bare Deno relay (`Deno.serve` + `fetch`, body piped
 * through), the same relay doing the least JavaScript any gateway must (the JS floor:
 * bench/bare_relay.ts) and the gateway. `wrk` (Debian) loads each with the same request: a
 * ~1.4 KB chat body, JSON or a 22-delta stream, at 32 connections (throughput) and 1
 * (latency). Then a slow-stream memory test: N concurrent streams held open, resident memory
 * per stream, and resident memory after repeated waves. Everything is reported as a ratio to
 * the bare relay, and to the JS floor.
 *
 *   npx -y deno@2.9.6 task bench   (BENCH_SECONDS, BENCH_STREAMS, BENCH_WAVES, BENCH_PROMPT_KB)
 *
 * BENCH_PROMPT_KB sizes the request's system prompt (default ~1 KB); a coding agent's request
 * carries its whole conversation, 50–200 KB.
 */
import { AUTH, type Server, startBareRelay, startGateway, startMock } from "./processes.ts";
import { byTurns, chatBody, type Load, ROUNDS, TURN_SECONDS, wrk } from "./load.ts";

const STREAMS = Number(Deno.env.get("BENCH_STREAMS") ?? 2000);
const WAVES = Number(Deno.env.get("BENCH_WAVES") ?? 4);
const WARM_SECONDS = 2;
/**
 * Warm-up passes over every server and request. With one, the case measured first read the
 * gateway's CPU per request ~40% higher than the same case measured later (BENCHMARKS.md,
 * 22:40 run): its JIT was still tiering up.
 */
const WARM_PASSES = 3;
/**
 * Quiet seconds before the memory test's last reading: past the 60 s V8 waits, with the start
 * task's `--memory-reducer-delay-ms`, before it shrinks an idle heap (docs/performance.md).
 */
const SETTLE_SECONDS = 70;

/** Opens `n` slow streams at once, waits until each sent its first bytes, holds, then reads. */
async function slowStreams(url: string, model: string, n: number, atPeak: () => Promise<void>) {
  const opened = Array.from({ length: n }, async () => {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: AUTH,
      body: chatBody(model, true),
    });
    const reader = res.body!.getReader();
    await reader.read();
    return reader;
  });
  const readers = await Promise.all(opened);
  await atPeak();
  await Promise.all(readers.map(async (r) => {
    while (!(await r.read()).done) { /* drain */ }
  }));
}

const signed = (n: number) => (n < 0 ? "−" : "+") + Math.abs(n).toFixed(0);
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
const kb = (bytes: number) => (bytes / 1024).toFixed(0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * RSS per concurrent slow stream, and RSS after each wave (memory must come back), on a fresh
 * server process so that one case's heap does not carry into the next. Per stream counts the
 * first wave: a later wave's peak also holds what the one before left for the collector.
 */
async function memory(start: () => Promise<Server>, model: string) {
  const server = await start();
  const idle = await server.rss();
  const peaks: number[] = [];
  const after: number[] = [];
  for (let wave = 0; wave < WAVES; wave++) {
    await slowStreams(server.url, model, STREAMS, async () => {
      peaks.push(await server.rss());
    });
    await sleep(5000);
    after.push(await server.rss());
  }
  // Heaps and allocators keep freed memory a while: what a quiet spell gives back.
  await sleep(SETTLE_SECONDS * 1000);
  const settled = await server.rss();
  await server.stop();
  const perStream = (peak: number) => (peak - idle) / STREAMS;
  return {
    idle,
    perStream: perStream(peaks[0]),
    highest: perStream(Math.max(...peaks)),
    after,
    settled,
  };
}

const mock = await startMock();
const bare = await startBareRelay(mock.url);
const floor = await startBareRelay(mock.url, true);
const gateway = await startGateway(mock.url);
try {
  console.log(
    `wrk ${ROUNDS} × ${TURN_SECONDS} s per server and case (median), loopback, ${navigator.hardwareConcurrency} cores, ` +
      `JSON requests of ${(chatBody("chat-text", false).length / 1024).toFixed(1)} KB\n`,
  );
  const rows: string[] = [
    "| case | c | mock direct | bare relay | relay, JS floor | gateway | ratio to bare | to JS floor | CPU/request: bare, gateway |",
    "|---|---|---|---|---|---|---|---|---|",
  ];
  // Every server warmed on every request first: the JIT's start is not what is measured.
  const warm: [Server, string][] = [
    [mock, "chat-text"],
    [bare, "chat-text"],
    [floor, "chat-text"],
    [gateway, "chat-text"],
    [gateway, "msg-text"],
  ];
  for (let pass = 0; pass < WARM_PASSES; pass++) {
    for (const stream of [false, true]) {
      for (const [server, model] of warm) {
        await wrk(server, chatBody(model, stream), 32, undefined, WARM_SECONDS);
      }
    }
  }
  for (const stream of [false, true]) {
    for (
      const [label, model] of [["same format (chat → chat)", "chat-text"], [
        "converted (chat → messages)",
        "msg-text",
      ]]
    ) {
      const body = chatBody(model, stream);
      // The bare relay and the mock serve the same request (the mock answers any model).
      const direct = chatBody("chat-text", stream);
      for (const c of [32, 1]) {
        const [m, b, s, g] = await byTurns(
          [[mock, direct], [bare, direct], [floor, direct], [gateway, body]],
          c,
        );
        const errors = m.errors + b.errors + s.errors + g.errors;
        const cell = (l: Load) =>
          c === 1 ? `${(l.p50Ms * 1000).toFixed(0)} µs p50` : `${l.rps.toFixed(0)} req/s`;
        const ratio = (floor: Load) =>
          c === 1
            ? `${signed((g.p50Ms - floor.p50Ms) * 1000)} µs`
            : `${(g.rps / floor.rps).toFixed(2)}×`;
        rows.push(
          `| ${stream ? "stream" : "JSON"}, ${label} | ${c} | ${cell(m)} | ${cell(b)} | ${
            cell(s)
          } | ${cell(g)} | ${ratio(b)} | ${ratio(s)}${errors ? ` (${errors} errors!)` : ""} | ${
            b.cpuUs.toFixed(0)
          } µs, ${g.cpuUs.toFixed(0)} µs (${(g.cpuUs / b.cpuUs).toFixed(2)}×) |`,
        );
        console.log(rows.at(-1));
      }
    }
  }
  console.log(`\n${rows.join("\n")}\n`);

  // What keeping a Responses answer costs: the same converted request, stored or not.
  const store: string[] = ["| Responses → messages, JSON, c=32 | gateway |", "|---|---|"];
  for (const stored of [false, true]) {
    const body = JSON.stringify({ model: "msg-text", store: stored, input: "Explain this." });
    const g = await wrk(gateway, body, 32, "/v1/responses");
    store.push(`| store: ${stored} | ${g.rps.toFixed(0)} req/s${g.errors ? " (errors!)" : ""} |`);
    console.log(store.at(-1));
  }
  console.log(`\n${store.join("\n")}\n`);

  if (WAVES > 0) {
    console.log(`slow streams: ${STREAMS} at once (300 ms between events), ${WAVES} waves`);
    const mem: string[] = [
      `| server | RSS idle | RSS per open stream, 1st wave (highest) | RSS after each wave | ${SETTLE_SECONDS} s later |`,
      "|---|---|---|---|---|",
    ];
    for (
      const [label, start, model] of [
        ["bare relay", () => startBareRelay(mock.url), "chat-slow"],
        ["relay, JS floor", () => startBareRelay(mock.url, true), "chat-slow"],
        ["gateway same format", () => startGateway(mock.url), "chat-slow"],
        ["gateway converted", () => startGateway(mock.url), "msg-slow"],
      ] as const
    ) {
      const m = await memory(start, model);
      mem.push(
        `| ${label} | ${mb(m.idle)} MB | ${kb(m.perStream)} KB (${kb(m.highest)} KB) | ${
          m.after.map((b) => `${mb(b)} MB`).join(" → ")
        } | ${mb(m.settled)} MB |`,
      );
      console.log(mem.at(-1));
    }
    console.log(`\n${mem.join("\n")}`);
  }
} finally {
  await gateway.stop();
  await floor.stop();
  await bare.stop();
  await mock.stop();
}
