/**
 * What the Redis-backed stores (responses, limits) share: a client that connects in the
 * background and reconnects by itself, fails commands at once while down (no offline queue),
 * bounds each command by a deadline, and closes without leaving a reconnect timer behind.
 */
import { createClient } from "redis";

export type RedisClient = ReturnType<typeof createClient>;

/** Longest wait between reconnect attempts while Redis is down. */
const RETRY_MAX_MS = 1000;

/** Starts connecting; errors (and the first connection's failure) go to `onError`. */
export function connectRedis(url: string | undefined, onError: (e: unknown) => void): RedisClient {
  const client = createClient({
    url,
    disableOfflineQueue: true,
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

/** `command`'s answer, or a RedisTimeout after `ms` (its late failure is ignored). */
export async function withDeadline<T>(command: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeout(ms)), ms);
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
