/**
 * A real redis-server from Debian on a free loopback port, for the Redis store tests
 * (.ci/install-redis.sh installs it; tests are ignored, saying MISSING, when it is absent).
 */
import { installed } from "./process.ts";
export { freePort } from "./process.ts";

export const REDIS = installed(["/usr/bin/redis-server", "/usr/local/bin/redis-server"]);
export const MISSING = "redis-server not installed: run .ci/install-redis.sh";

export interface RedisServer {
  port: number;
  /** The redis-server process (SIGSTOP stalls it). */
  pid: number;
  stop(): Promise<void>;
}

export async function startRedis(port: number): Promise<RedisServer> {
  const child = new Deno.Command(REDIS!, {
    args: ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    stdout: "null",
    stderr: "null",
  }).spawn();
  for (let i = 0; i < 100; i++) {
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      c.close();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    port,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("redis-cli", { args: ["-p", String(port), ...args] })
    .output();
  return new TextDecoder().decode(out.stdout).trim();
}
