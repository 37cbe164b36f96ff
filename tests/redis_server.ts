/**
 * A real redis-server from Debian on a free loopback port, for the Redis store tests
 * (.ci/install-redis.sh installs it; tests are ignored, saying MISSING, when it is absent).
 */
import { installed } from "./process.ts";
import type { LimitStore } from "../src/state/limits/store.ts";
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

/** Until a limits store answers (its Redis client connects in the background). */
export async function storeReady(store: LimitStore) {
  for (let i = 0; i < 100; i++) {
    try {
      return await store.read("probe", {}, Date.now());
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error("the Redis limits store did not become ready");
}

/** Until the gateway at `url` reads its limits store (the usage endpoint answers 200). */
export async function limitsReady(url: string, key: string) {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${url}/v1/gateway/usage`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await res.body?.cancel();
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the Redis limits store did not become ready");
}
