/**
 * A real Redis Cluster for tests: six redis-server processes in cluster mode on free loopback
 * ports, joined by `redis-cli --cluster create` into three masters with a replica each. Replicas
 * never take over by themselves (`cluster-replica-no-failover`): a test kills a master and
 * promotes its replica when it chooses (`CLUSTER FAILOVER FORCE`), so the time between is its
 * own. A dead master leaves the other slots served (`cluster-require-full-coverage no`, as
 * docs/scaling.md advises).
 */
import { freePort, REDIS, redisCli } from "./redis_server.ts";

export { MISSING, REDIS } from "./redis_server.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Node {
  port: number;
  child: Deno.ChildProcess;
}

export interface RedisCluster {
  /** Seed URLs, as `redis_cluster` takes them (two are enough: the rest is discovered). */
  urls: string[];
  /** The master serving `key`'s hash slot, and its replica. */
  shardOf(key: string): Promise<{ master: number; replica: number }>;
  /** SIGKILLs the node on `port`. */
  kill(port: number): Promise<void>;
  /** Promotes the replica on `port` (its master dead) and waits until the cluster says so. */
  promote(port: number): Promise<void>;
  stop(): Promise<void>;
}

async function until(what: string, ok: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`Redis Cluster: timed out waiting for ${what}`);
    await sleep(100);
  }
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = await Deno.makeTempDir({ prefix: "gateway-redis-cluster-" });
  const nodes: Node[] = [];
  const start = (port: number) => {
    const child = new Deno.Command(REDIS!, {
      args: [
        ...["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        ...["--dir", dir, "--cluster-enabled", "yes"],
        ...["--cluster-config-file", `nodes-${port}.conf`, "--cluster-node-timeout", "1000"],
        ...["--cluster-require-full-coverage", "no", "--cluster-replica-no-failover", "yes"],
        // Replicas sync at once (the default waits 5 s for more of them).
        ...["--repl-diskless-sync-delay", "0"],
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    nodes.push({ port, child });
  };
  const stop = async () => {
    for (const n of nodes) {
      try {
        n.child.kill("SIGKILL");
      } catch { /* already dead */ }
      await n.child.status;
    }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    for (let i = 0; i < 6; i++) start(freePort());
    for (const { port } of nodes) await until(`node ${port}`, async () => (await ping(port)));
    const create = await new Deno.Command("redis-cli", {
      args: [
        "--cluster",
        "create",
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        "--cluster-replicas",
        "1",
        "--cluster-yes",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!create.success) throw new Error(new TextDecoder().decode(create.stdout));
    await until("the cluster to be ok everywhere", async () => {
      const states = await Promise.all(nodes.map((n) => redisCli(n.port, "CLUSTER", "INFO")));
      const replicas = await Promise.all(nodes.map((n) => redisCli(n.port, "ROLE")));
      return states.every((s) => s.includes("cluster_state:ok")) &&
        replicas.filter((r) => r.startsWith("slave") && r.includes("connected")).length === 3;
    });
  } catch (e) {
    await stop();
    throw e;
  }
  const live = () => nodes.filter((n) => n.child.pid && alive.has(n.port));
  const alive = new Set(nodes.map((n) => n.port));
  return {
    urls: nodes.slice(0, 2).map((n) => `redis://127.0.0.1:${n.port}`),
    async shardOf(key) {
      const port = live()[0].port;
      const slot = Number(await redisCli(port, "CLUSTER", "KEYSLOT", key));
      // CLUSTER NODES: id addr flags master-id ping pong epoch state slots…
      const lines = (await redisCli(port, "CLUSTER", "NODES")).split("\n").map((l) => l.split(" "));
      const flags = (f: string[]) => f[2].split(",");
      const master = lines.find((f) =>
        flags(f).includes("master") && !flags(f).includes("fail") && f.slice(8).some((r) => {
          const [from, to = from] = r.split("-").map(Number);
          return slot >= from && slot <= to;
        })
      )!;
      const replica = lines.find((f) => f[3] === master[0])!;
      const portOf = (f: string[]) => Number(f[1].split("@")[0].split(":")[1]);
      return { master: portOf(master), replica: portOf(replica) };
    },
    async kill(port) {
      const node = nodes.find((n) => n.port === port)!;
      alive.delete(port);
      node.child.kill("SIGKILL");
      await node.child.status;
    },
    async promote(port) {
      // The replica must see its master fail first (cluster-node-timeout: 1 s).
      await until(
        "the master to be seen as failed",
        async () =>
          (await redisCli(port, "CLUSTER", "NODES")).split("\n").some((l) =>
            l.split(" ")[2].split(",").includes("fail")
          ),
      );
      await redisCli(port, "CLUSTER", "FAILOVER", "FORCE");
      await until(
        "the replica to become master",
        async () => (await redisCli(port, "ROLE")).startsWith("master"),
      );
    },
    stop,
  };
}

async function ping(port: number): Promise<boolean> {
  try {
    const c = await Deno.connect({ hostname: "127.0.0.1", port });
    c.close();
    return true;
  } catch {
    return false;
  }
}
