/**
 * `deno task bench:scaling`: what running as many costs and gains (docs/scaling.md), in one run
 * on loopback with wrk (Debian's):
 * - throughput of `workers: 1` against `workers: 2` (two gateway threads on one port), relayed
 *   JSON and relayed streams at 32 connections, as a ratio. The load generator and the mock
 *   provider run on the same cores as the gateway: on a 2-core machine they take a share of
 *   the second core, so the ratio is a floor of what a host with spare cores sees;
 * - what an identity's limits cost per request: none, counted in memory, counted in Redis (a
 *   local redis-server): the gateway's CPU per request and the median latency at 1 connection
 *   (which holds Redis's round trip).
 *
 *   npx -y deno@2.9.6 task bench:scaling   (BENCH_SECONDS; needs wrk and redis-server)
 */
import { byTurns, chatBody, type Load, machineBusy, ROUNDS, TURN_SECONDS, wrk } from "./load.ts";
import { type Server, startGateway, startMock } from "./processes.ts";
import { REDIS, startRedis } from "../tests/redis_server.ts";
import { freePort } from "../tests/process.ts";

const WARM_SECONDS = 2;

/**
 * Past this share of the machine busy before any load, the workers ratio is flagged: on a 2-core
 * machine other jobs kept busy, tiny runs read 0.36× and 1.60× a few seconds apart (workers: 1
 * alone from 229 to 2,624 req/s between 2-s runs), which no code change explains.
 */
const BUSY_WARNING = 0.15;

/** Limits that never refuse: every request is counted, none turned away. */
const LIMITS = { requests_per_minute: 1e9, tokens_per_minute: 1e12 };

const mock = await startMock();
const servers: Server[] = [];
const start = async (tweak?: Parameters<typeof startGateway>[1]) => {
  const s = await startGateway(mock.url, tweak);
  servers.push(s);
  return s;
};
const redis = REDIS ? await startRedis(freePort()) : undefined;
try {
  console.log(
    `wrk ${ROUNDS} × ${TURN_SECONDS} s per server and case (median), loopback, ` +
      `${navigator.hardwareConcurrency} cores shared by wrk, the mock and the gateway\n`,
  );
  const one = await start();
  const two = await start((c) => void (c.workers = 2));
  const others = await machineBusy();
  if (others > BUSY_WARNING) {
    console.log(
      `warning: ${(others * 100).toFixed(0)}% of the machine's CPU was busy before any load ` +
        "(other processes): the workers ratio needs the second core free; rerun on a quiet machine\n",
    );
  }
  const rows = [
    "| relayed (chat → chat), c=32 | workers: 1 | workers: 2 | ratio | CPU/request: 1, 2 |",
    "|---|---|---|---|---|",
  ];
  for (const stream of [false, true]) {
    const body = chatBody("chat-text", stream);
    // Each thread compiles its own code: two threads get twice the warm-up (cold, a gateway's
    // first second costs about three times the CPU per request of its third).
    await wrk(one, body, 32, undefined, WARM_SECONDS);
    await wrk(two, body, 32, undefined, 2 * WARM_SECONDS);
    const [a, b] = await byTurns([[one, body], [two, body]], 32);
    rows.push(
      `| ${stream ? "stream" : "JSON"} | ${a.rps.toFixed(0)} req/s | ${b.rps.toFixed(0)} req/s | ${
        (b.rps / a.rps).toFixed(2)
      }×${errors(a, b)} | ${a.cpuUs.toFixed(0)} µs, ${b.cpuUs.toFixed(0)} µs |`,
    );
    console.log(rows.at(-1));
  }
  console.log(`\n${rows.join("\n")}\n`);

  const limited = await start((c) => void (c.keys[0].limits = LIMITS));
  const cases: [string, Server][] = [["no limits", one], ["limits in memory", limited]];
  if (redis) {
    cases.push([
      "limits in Redis",
      await start((c) => {
        c.keys[0].limits = LIMITS;
        c.limits_store = { ...c.limits_store, redis_url: `redis://127.0.0.1:${redis.port}` };
      }),
    ]);
  } else console.log("redis-server not installed: the Redis case is left out");
  const body = chatBody("chat-text", false);
  for (const [, s] of cases) await wrk(s, body, 32, undefined, WARM_SECONDS);
  const busy = await byTurns(cases.map(([, s]) => [s, body]), 32);
  const alone = await byTurns(cases.map(([, s]) => [s, body]), 1);
  const costs = [
    "| relayed JSON, an identity's limits | c=32 | CPU/request | more than none | p50 at c=1 | more than none |",
    "|---|---|---|---|---|---|",
  ];
  cases.forEach(([label], i) => {
    const cpu = busy[i].cpuUs - busy[0].cpuUs;
    const p50 = (alone[i].p50Ms - alone[0].p50Ms) * 1000;
    costs.push(
      `| ${label} | ${busy[i].rps.toFixed(0)} req/s${errors(busy[i], alone[i])} | ${
        busy[i].cpuUs.toFixed(0)
      } µs | ${cpu.toFixed(0)} µs | ${(alone[i].p50Ms * 1000).toFixed(0)} µs | ${
        p50.toFixed(0)
      } µs |`,
    );
    console.log(costs.at(-1));
  });
  console.log(`\n${costs.join("\n")}`);
} finally {
  for (const s of servers) await s.stop();
  await redis?.stop();
  await mock.stop();
}

function errors(...loads: Load[]): string {
  const n = loads.reduce((sum, l) => sum + l.errors, 0);
  return n ? ` (${n} errors!)` : "";
}
