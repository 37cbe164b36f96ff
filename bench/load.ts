/**
 * Loading a server with wrk (Debian's): one request body at a number of connections, the
 * server process's CPU time per request read from /proc; several servers by turns. Shared by
 * bench/gateway_bench.ts and bench/scaling_bench.ts.
 */
import { AUTH, type Server } from "./processes.ts";

export const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 5);
/** Runs per server and case, by turns (odd: the median is one of them), of whole seconds. */
export const ROUNDS = 3;
export const TURN_SECONDS = Math.max(1, Math.ceil(SECONDS / 2));
const SENTENCE = "You are a careful coding assistant. ";
const PROMPT = SENTENCE.repeat(
  Math.max(1, Math.round(Number(Deno.env.get("BENCH_PROMPT_KB") ?? 1.05) * 1024 / SENTENCE.length)),
);

/** A chat request (~1.4 KB by default); `chunks22` makes the mock stream its text in 22 deltas. */
export function chatBody(model: string, stream: boolean): string {
  return JSON.stringify({
    model: `${model}-chunks22`,
    stream,
    ...(stream && { stream_options: { include_usage: true } }),
    messages: [
      { role: "system", content: PROMPT },
      { role: "user", content: "Explain what this function does and suggest one improvement." },
    ],
  });
}

export interface Load {
  rps: number;
  p50Ms: number;
  errors: number;
  /** The server process's CPU time (user + system) per request, µs. */
  cpuUs: number;
}

/** Clock ticks per second of /proc/<pid>/stat's times (Linux's USER_HZ, 100 on every arch). */
const USER_HZ = 100;

/** A process's CPU time so far (user + system), in clock ticks. */
async function cpuTicks(pid: number): Promise<number> {
  // Read through `cat`: Deno lets only --allow-all read /proc directly.
  const out = await new Deno.Command("cat", { args: [`/proc/${pid}/stat`] }).output();
  const stat = new TextDecoder().decode(out.stdout);
  // Fields after the command name (which may hold spaces), from field 3 on: utime is 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * The share (0–1) of the machine's CPU, all cores, that was busy over `ms` (/proc/stat): before
 * any load, what other processes take — a ratio of throughputs means little on a busy machine.
 */
export async function machineBusy(ms = 1000): Promise<number> {
  const read = async () => {
    const out = await new Deno.Command("cat", { args: ["/proc/stat"] }).output();
    const cpu = new TextDecoder().decode(out.stdout).split("\n")[0].trim().split(/\s+/);
    const ticks = cpu.slice(1, 9).map(Number); // user … steal (guest is counted in user)
    return { total: ticks.reduce((a, b) => a + b, 0), idle: ticks[3] + ticks[4] };
  };
  const before = await read();
  await new Promise((r) => setTimeout(r, ms));
  const after = await read();
  return 1 - (after.idle - before.idle) / Math.max(1, after.total - before.total);
}

/** One wrk run; the body goes in through a Lua script (wrk has no body flag). */
export async function wrk(
  server: Server,
  body: string,
  connections: number,
  path = "/v1/chat/completions",
  seconds = SECONDS,
): Promise<Load> {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  const headers = Object.entries(AUTH).map(([k, v]) => `wrk.headers["${k}"] = "${v}"`);
  await Deno.writeTextFile(
    script,
    [`wrk.method = "POST"`, `wrk.body = [==[${body}]==]`, ...headers].join("\n"),
  );
  try {
    const ticks = await cpuTicks(server.pid);
    const out = await new Deno.Command("wrk", {
      args: [
        "-t1",
        `-c${connections}`,
        `-d${seconds}s`,
        "--latency",
        "-s",
        script,
        server.url + path,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const cpuSeconds = (await cpuTicks(server.pid) - ticks) / USER_HZ;
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success) throw new Error(`wrk failed: ${new TextDecoder().decode(out.stderr)}`);
    const p50 = text.match(/^\s+50%\s+([\d.]+)(us|ms|s)\b/m)!;
    const scale = { us: 0.001, ms: 1, s: 1000 }[p50[2] as "us" | "ms" | "s"];
    return {
      rps: Number(text.match(/Requests\/sec:\s+([\d.]+)/)![1]),
      p50Ms: Number(p50[1]) * scale,
      errors: Number(text.match(/Non-2xx or 3xx responses:\s+(\d+)/)?.[1] ?? 0) +
        Number(text.match(/Socket errors:.*timeout (\d+)/)?.[1] ?? 0),
      cpuUs: cpuSeconds * 1e6 / Number(text.match(/(\d+) requests in/)![1]),
    };
  } finally {
    await Deno.remove(script);
  }
}

/**
 * Every server loaded by turns: `ROUNDS` rounds of `TURN_SECONDS` each, the median run kept (by
 * req/s, or by p50 at one connection). One run per server in a fixed order was biased: a run right
 * after another server's load reads slower (the bare relay's p50 at c=1: 201–207 µs after its own
 * load, 282 µs after the gateway's), and single 5-s runs moved by ±5%.
 */
export async function byTurns(servers: [Server, string][], connections: number): Promise<Load[]> {
  const runs: Load[][] = servers.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [server, body]] of servers.entries()) {
      runs[i].push(await wrk(server, body, connections, undefined, TURN_SECONDS));
    }
  }
  const key = (l: Load) => connections === 1 ? l.p50Ms : l.rps;
  const middle = (r: Load[], by: (l: Load) => number) =>
    r.toSorted((a, b) => by(a) - by(b))[Math.floor(r.length / 2)];
  return runs.map((r) => ({
    ...middle(r, key),
    cpuUs: middle(r, (l) => l.cpuUs).cpuUs,
    errors: r.reduce((n, l) => n + l.errors, 0),
  }));
}
