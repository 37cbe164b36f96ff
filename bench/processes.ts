/**
 * The benchmark's servers, each in its own process so that a load generator measures one at a
 * time: the loopback mock provider, a bare Deno relay (the floor), and the gateway.
 */
import type { Config } from "../src/config/config.ts";
import { KEY, mockConfig } from "../tests/helpers.ts";

export interface Server {
  url: string;
  pid: number;
  /** Resident memory of the process now, in bytes. */
  rss(): Promise<number>;
  stop(): Promise<void>;
}

const here = (path: string) => new URL(path, import.meta.url);

/**
 * The V8 flags `deno task start` runs the gateway with (deno.json): every relay measured here gets
 * them, so the gateway runs as deployed and the floors are not handicapped against it.
 */
const V8_FLAGS: string[] = JSON.parse(Deno.readTextFileSync(here("../deno.json")))
  .tasks.start.match(/--v8-flags=\S+/g) ?? [];

/** Resident memory of a process, from `ps` (reading /proc would need --allow-all). */
async function rssOf(pid: number): Promise<number> {
  const out = await new Deno.Command("ps", { args: ["-o", "rss=", "-p", String(pid)] }).output();
  return Number(new TextDecoder().decode(out.stdout).trim()) * 1024;
}

/** Spawns `deno` with `args` and waits until `listening` finds the URL in its output. */
async function spawn(
  args: string[],
  env: Record<string, string>,
  listening: RegExp,
  from: "stdout" | "stderr",
): Promise<Server> {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { ...env, NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child[from].pipeThrough(new TextDecoderStream()).getReader();
  const other = from === "stdout" ? child.stderr : child.stdout;
  other.pipeTo(new WritableStream()).catch(() => {});
  let seen = "";
  let url: string | undefined;
  while (!url) {
    const { done, value } = await lines.read();
    if (done) throw new Error(`${args.join(" ")} exited before listening:\n${seen}`);
    seen += value;
    url = seen.match(listening)?.[1];
  }
  // Keep draining so a chatty process never blocks on a full pipe.
  (async () => {
    while (!(await lines.read()).done) { /* drain */ }
  })().catch(() => {});
  return {
    url,
    pid: child.pid,
    rss: () => rssOf(child.pid),
    async stop() {
      child.kill("SIGKILL");
      await child.status;
    },
  };
}

/** The tests' mock provider (tests/mock), on a free loopback port, keeping no requests. */
export function startMock(): Promise<Server> {
  const code = `import { startMockUpstream } from "${here("../tests/mock/upstream.ts").href}";` +
    `console.log("mock on " + (await startMockUpstream({ record: false })).url);`;
  return spawn(["eval", "--ext=ts", code], {}, /mock on (http:\/\/\S+)/, "stdout");
}

/** `Deno.serve` + `fetch`, the body piped through: what any relay must cost at least. */
export function startBareRelay(upstream: string, jsFloor = false): Promise<Server> {
  return spawn(
    ["run", ...V8_FLAGS, "--allow-net", "--allow-env", here("bare_relay.ts").pathname],
    { UPSTREAM: upstream, JS_FLOOR: jsFloor ? "1" : "0" },
    /bare relay on (http:\/\/\S+)/,
    "stdout",
  );
}

/**
 * The gateway itself (main.ts), configured for the mock, access log off; `tweak` changes its
 * config (workers, limits, Redis) before it starts.
 */
export async function startGateway(
  upstream: string,
  tweak: (config: Config) => void = () => {},
): Promise<Server> {
  const config = await Deno.makeTempFile({ suffix: ".json" });
  const doc = await mockConfig(upstream);
  tweak(doc);
  // Connections reused as with an https provider (HTTP/2): the bench measures the relay, not
  // a TCP handshake per call (plain-http providers default to keep_alive: false).
  for (const p of doc.providers) p.keep_alive = true;
  await Deno.writeTextFile(config, JSON.stringify(doc));
  const server = await spawn(
    [
      "run",
      ...V8_FLAGS,
      "--unstable-no-legacy-abort",
      "--unstable-net",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      here("../main.ts").pathname,
      "--config",
      config,
    ],
    // Metrics on, as in production (with them off nothing is collected: 1.6% faster).
    { PORT: "0", GATEWAY_ACCESS_LOG: "off", METRICS_PORT: "0" },
    /listening on (http:\/\/[\d.]+:\d+)/,
    "stderr",
  );
  return {
    ...server,
    async stop() {
      await server.stop();
      await Deno.remove(config);
    },
  };
}

export const AUTH = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
