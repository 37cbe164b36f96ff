/** The gateway (main.ts) and other servers as child processes, for end-to-end tests. */
import type { Config } from "../src/config.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Child {
  /** Waits (at most 15 s) for a line of its stderr matching `pattern`. */
  wait(pattern: RegExp, what: string): Promise<RegExpMatchArray>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/** Starts a process whose stderr is collected (stdout is dropped). */
export function spawn(cmd: string, args: string[], env: Record<string, string> = {}): Child {
  const child = new Deno.Command(cmd, { args, env, stdout: "null", stderr: "piped" }).spawn();
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
      child.kill("SIGTERM");
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

export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}
