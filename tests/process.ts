/** The gateway (main.ts) and other servers as child processes, for end-to-end tests. */
import type { Config } from "../src/config/config.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Child {
  /** Waits (at most 15 s) for a line of its stderr matching `pattern`. */
  wait(pattern: RegExp, what: string): Promise<RegExpMatchArray>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/** Starts a process whose stderr is collected (stdout is dropped), in `cwd` if given. */
export function spawn(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
  cwd?: string,
): Child {
  const child = new Deno.Command(cmd, { args, env, cwd, stdout: "null", stderr: "piped" }).spawn();
  let text = "";
  const done = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) text += chunk;
  })();
  return {
    async wait(pattern, what) {
      for (let i = 0; i < 300; i++) {
        const m = text.match(pattern);
        if (m) return m;
        await sleep(50);
      }
      throw new Error(`${what} did not start:\n${text}`);
    },
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // It has exited already (a gateway that refused its config): its stderr says why.
      }
      await child.status;
      await done;
    },
  };
}

export interface GatewayProcess extends Child {
  /** The gateway's base URL. */
  url: string;
  /** The metrics listener's port, when `config.metrics` is set. */
  metricsPort?: number;
}

/** Runs main.ts with `config` (written to `dir`), with the access log off. */
export async function startGateway(
  config: Config,
  dir: string,
  env: Record<string, string> = {},
): Promise<GatewayProcess> {
  // JSON is YAML.
  await Deno.writeTextFile(`${dir}/gateway.yaml`, JSON.stringify(config));
  const child = spawn(Deno.execPath(), [
    "run",
    // `workers` share the port with reusePort, unstable in Deno 2.9.
    "--unstable-net",
    "--allow-net",
    "--allow-env",
    "--allow-read",
    new URL("../main.ts", import.meta.url).pathname,
    "--config",
    `${dir}/gateway.yaml`,
  ], { GATEWAY_ACCESS_LOG: "off", NO_COLOR: "1", ...env });
  try {
    const [, port] = await child.wait(/gateway listening on http:\/\/[\d.]+:(\d+)/, "gateway");
    const metrics = config.metrics &&
      await child.wait(/metrics on http:\/\/[\d.]+:(\d+)\/metrics/, "metrics");
    return {
      ...child,
      url: `http://127.0.0.1:${port}`,
      metricsPort: metrics ? Number(metrics[1]) : undefined,
    };
  } catch (e) {
    await child.stop();
    throw e;
  }
}

/** The first of `paths` that is a file (a tool some tests need), or undefined. */
export function installed(paths: string[]): string | undefined {
  return paths.find((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
}

export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** main.ts (or a bundle) as a child process, its stdout and stderr read as they come. */
export interface WatchedGateway {
  url: string;
  process: Deno.ChildProcess;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  /** Waits until `count` stdout JSON lines (access or reload) match; returns every match. */
  lines(
    match: (line: Record<string, unknown>) => boolean,
    count?: number,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>[]>;
  /** Waits until stderr matches `pattern` (a line written after the listening one may lag). */
  stderrMatch(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Waits for the process to exit; everything it wrote. */
  output(): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** Starts `deno run <entry>` on a free port and waits for its listening line. */
export async function spawnGateway(
  entry: string,
  args: string[],
  env: Record<string, string>,
): Promise<WatchedGateway> {
  const process = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--unstable-no-legacy-abort",
      "--unstable-net",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      entry,
      ...args,
    ],
    // The built-in config turns metrics on at 9464: any free port instead.
    env: { ...env, PORT: "0", METRICS_PORT: "0" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const text = { stdout: "", stderr: "" };
  const changed = new EventTarget();
  const collect = async (name: keyof typeof text, stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text[name] += chunk;
      changed.dispatchEvent(new Event("data"));
    }
  };
  let ended = false;
  const exited = Promise.all([
    collect("stdout", process.stdout),
    collect("stderr", process.stderr),
  ]).then(() => {
    ended = true;
    changed.dispatchEvent(new Event("data"));
    return process.status;
  });
  /** Resolves with `find()`'s first value, tried again as output arrives. */
  const waitFor = <T>(find: () => T | undefined, what: string, timeoutMs: number) => {
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    const fail = (why: string) => {
      finish();
      reject(new Error(`${why} ${what}\nstdout:\n${text.stdout}\nstderr:\n${text.stderr}`));
    };
    const check = () => {
      const found = find();
      if (found !== undefined) {
        finish();
        resolve(found);
      } else if (ended) fail("the gateway exited before");
    };
    const timer = setTimeout(() => fail("timed out waiting for"), timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      changed.removeEventListener("data", check);
    };
    changed.addEventListener("data", check);
    check();
    return promise;
  };
  const url = await waitFor(
    () => text.stderr.match(/listening on (http:\/\/[\d.]+:\d+)/)?.[1],
    "its listening line",
    // Several gateways (or threads) loading at once on a busy 2-core machine take a while.
    60_000,
  );
  return {
    url,
    process,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    lines: (match, count = 1, timeoutMs = 10_000) =>
      waitFor(
        () => {
          // Whole lines only: the last may still be arriving.
          const found = text.stdout.split("\n").slice(0, -1).filter((l) => l.startsWith("{"))
            .map((l) => JSON.parse(l)).filter(match);
          return found.length >= count ? found : undefined;
        },
        `${count} matching log line(s)`,
        timeoutMs,
      ),
    stderrMatch: (pattern, timeoutMs = 10_000) =>
      waitFor(() => text.stderr.match(pattern) ?? undefined, `stderr ${pattern}`, timeoutMs),
    async output() {
      const { code } = await exited;
      return { code, ...text };
    },
  };
}
