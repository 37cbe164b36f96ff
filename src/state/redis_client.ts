/**
 * What the Redis-backed stores (responses, limits) share: a client that connects in the
 * background and reconnects by itself, fails commands at once while down (no offline queue) or
 * stalled (no queue behind a command past its deadline), bounds each command by a deadline and
 * the commands waiting, and closes without leaving a reconnect timer behind.
 */
import { createClient } from "redis";

export type RedisClient = ReturnType<typeof createClient>;

/** Longest wait between reconnect attempts while Redis is down. */
const RETRY_MAX_MS = 1000;

/**
 * Commands a client holds unanswered at most; past it one fails at once. A command is sent as
 * soon as it is made, so a stalled server's socket takes them until its buffers fill, and the
 * client keeps the rest (and every unanswered one's promise) in memory.
 */
const MAX_PENDING = 1000;

/** Starts connecting; errors (and the first connection's failure) go to `onError`. */
export function connectRedis(url: string | undefined, onError: (e: unknown) => void): RedisClient {
  const client = createClient({
    url,
    disableOfflineQueue: true,
    commandsQueueMaxLength: MAX_PENDING,
    socket: {
      connectTimeout: 2000,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, RETRY_MAX_MS),
    },
  });
  client.on("error", onError);
  client.connect().catch(onError);
  return client;
}

/** A command that did not answer within its deadline. */
export class RedisTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** Per client: its commands past their deadline and still unanswered (none: no entry). */
const overdue = new WeakMap<RedisClient, number>();

/**
 * The answer of `send()`, a command on `client`, or a RedisTimeout after `ms` (its late failure
 * is ignored). While an earlier command is past its deadline and unanswered, the server is
 * stalled: nothing is sent, the call fails at once. A stalled server (a paused process, a full
 * network buffer) executes what it was sent when it recovers: queued limit checks would count
 * then, long after their requests, and their promises pile up meanwhile.
 */
export async function withDeadline<T>(
  client: RedisClient,
  ms: number,
  send: () => Promise<T>,
): Promise<T> {
  if (overdue.has(client)) throw new RedisTimeout(ms);
  const command = send();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new RedisTimeout(ms));
      overdue.set(client, (overdue.get(client) ?? 0) + 1);
      const answered = () => {
        const left = overdue.get(client)! - 1;
        if (left) overdue.set(client, left);
        else overdue.delete(client);
      };
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

/** Closes the connection; while reconnecting, also waits out the client's retry sleep. */
export async function closeRedis(client: RedisClient): Promise<void> {
  let retrying: Promise<void> | undefined;
  if (client.isOpen && !client.isReady) {
    retrying = new Promise((resolve) => {
      const timer = setTimeout(resolve, RETRY_MAX_MS + 100);
      client.once("reconnecting", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  try {
    client.destroy();
  } catch {
    // already closed
  }
  await retrying;
}
