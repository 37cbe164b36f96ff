/**
 * What the Redis-backed stores (responses, limits) share: a link to one Redis (here) or to a
 * Redis Cluster (src/redis_cluster.ts; src/redis_link.ts picks) that connects in the background
 * and reconnects by itself, fails commands at once while down (no offline queue) or stalled (no
 * queue behind a command past its deadline), bounds each command by a deadline and the commands
 * waiting, and closes without leaving a reconnect timer behind.
 */
import { createClient } from "redis";

/** The commands the stores send, each answered within `ms` or failed with a RedisTimeout. */
export interface RedisLink {
  /** Connected (a cluster: its slot map known); else commands would fail at once. */
  readonly isReady: boolean;
  /** A Lua script over `keys`, which must share one hash slot (Redis Cluster). */
  eval(script: string, keys: string[], args: string[], ms: number): Promise<unknown>;
  get(key: string, ms: number): Promise<unknown>;
  close(): Promise<void>;
}

/** Longest wait between reconnect attempts while Redis is down. */
export const RETRY_MAX_MS = 1000;

/**
 * Commands a client holds unanswered at most; past it one fails at once. A command is sent as
 * soon as it is made, so a stalled server's socket takes them until its buffers fill, and the
 * client keeps the rest (and every unanswered one's promise) in memory.
 */
const MAX_PENDING = 1000;

/** How a client (or a cluster's client of each node) connects and reconnects. */
export const CLIENT_OPTIONS = {
  disableOfflineQueue: true,
  commandsQueueMaxLength: MAX_PENDING,
  socket: {
    connectTimeout: 2000,
    reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, RETRY_MAX_MS),
  },
};

type RedisClient = ReturnType<typeof createClient>;

/** One Redis server. */
export class ServerLink implements RedisLink {
  private readonly client: RedisClient;
  private readonly deadlines = new Deadlines();

  constructor(url: string | undefined, onError: (e: unknown) => void) {
    this.client = createClient({ url, ...CLIENT_OPTIONS });
    this.client.on("error", onError);
    this.client.connect().catch(onError);
  }

  get isReady(): boolean {
    return this.client.isReady;
  }

  eval(script: string, keys: string[], args: string[], ms: number): Promise<unknown> {
    return this.deadlines.run(() => this.client.eval(script, { keys, arguments: args }), ms);
  }

  get(key: string, ms: number): Promise<unknown> {
    return this.deadlines.run(() => this.client.get(key), ms);
  }

  close(): Promise<void> {
    return closeRedis(this.client);
  }
}

/** A command that did not answer within its deadline. */
export class RedisTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/**
 * The commands of one link, each answered or failed with a RedisTimeout within its deadline (a
 * late failure is ignored). While an earlier command is past its deadline and unanswered, the
 * server is stalled: nothing is sent, the call fails at once. A stalled server (a paused process,
 * a full network buffer) executes what it was sent when it recovers: queued limit checks would
 * count then, long after their requests, and their promises pile up meanwhile. A cluster's link
 * has one for all its nodes: while one node stalls, every command fails at once (per `on_error`).
 */
export class Deadlines {
  /** Commands past their deadline and still unanswered. */
  private overdue = 0;

  async run<T>(send: () => Promise<T>, ms: number): Promise<T> {
    if (this.overdue) throw new RedisTimeout(ms);
    const command = send();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new RedisTimeout(ms));
        this.overdue++;
        const answered = () => void this.overdue--;
        command.then(answered, answered);
      }, ms);
    });
    command.catch(() => {});
    try {
      return await Promise.race([command, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Closes the connection; while reconnecting, also waits out the client's retry sleep. */
export async function closeRedis(client: RedisClient): Promise<void> {
  const retrying = retrySleep(client);
  try {
    client.destroy();
  } catch {
    // already closed
  }
  await retrying;
}

/**
 * The end of the retry sleep of a client that is reconnecting (it outlives `destroy`), to be
 * awaited after destroying it; undefined when it is not reconnecting.
 */
export function retrySleep(
  client: Pick<RedisClient, "isOpen" | "isReady" | "once">,
): Promise<void> | undefined {
  if (!client.isOpen || client.isReady) return undefined;
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, RETRY_MAX_MS + 100);
    client.once("reconnecting", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
