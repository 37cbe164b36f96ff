/**
 * Stored responses in Redis (`response_store.redis_url`): one key per response under
 * `redis_prefix`, its TTL set in Redis, so every instance behind one Kong upstream sees the
 * same responses and they survive restarts. While Redis is unreachable, commands fail at once
 * (no offline queue) and callers answer 503 naming the store; the client reconnects by itself.
 * Errors are logged without content.
 */
import { createClient } from "redis";
import type { ResponseStoreConfig } from "./config.ts";
import {
  type PutResult,
  type ResponseStore,
  type StoredResponse,
  storeUnavailable,
} from "./store.ts";

const MB = 1024 * 1024;
/** Longest wait between reconnect attempts while Redis is down. */
const RETRY_MAX_MS = 1000;
type Client = ReturnType<typeof createClient>;

export class RedisStore implements ResponseStore {
  readonly name = "redis";
  private lastLogged = 0;

  private constructor(
    private readonly client: Client,
    private readonly cfg: ResponseStoreConfig,
  ) {}

  /** Starts connecting; the gateway starts even if Redis is down. */
  static connect(cfg: ResponseStoreConfig): RedisStore {
    const client = createClient({
      url: cfg.redis_url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: 2000,
        reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, RETRY_MAX_MS),
      },
    });
    const store = new RedisStore(client, cfg);
    client.on("error", (e: unknown) => store.logError(e));
    client.connect().catch((e: unknown) => store.logError(e));
    return store;
  }

  /** At most one line per 5 s: the error's name and message, never a key or a record. */
  private logError(e: unknown) {
    const now = Date.now();
    if (now - this.lastLogged < 5000) return;
    this.lastLogged = now;
    const error = e instanceof Error ? `${e.name}: ${e.message}` : "unknown error";
    console.error(JSON.stringify({ level: "error", msg: "response store", store: "redis", error }));
  }

  private key(id: string) {
    return this.cfg.redis_prefix + id;
  }

  private async run<T>(op: () => Promise<T>): Promise<T> {
    if (!this.client.isReady) throw storeUnavailable(this.name);
    try {
      return await op();
    } catch (e) {
      this.logError(e);
      throw storeUnavailable(this.name);
    }
  }

  async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    const json = await this.run(() => this.client.get(this.key(id)));
    if (typeof json !== "string") return undefined;
    const record = JSON.parse(json) as StoredResponse;
    return record.owner === owner ? record : undefined;
  }

  async put(record: StoredResponse): Promise<PutResult> {
    const json = JSON.stringify(record);
    if (json.length > this.cfg.max_item_mb * MB) return "too_large";
    const ok = await this.run(() =>
      this.client.set(this.key(record.id), json, { EX: this.cfg.ttl_s, NX: true })
    );
    return ok === "OK" ? "kept" : "taken";
  }

  async delete(id: string, owner: string): Promise<boolean> {
    if (!(await this.get(id, owner))) return false;
    return (await this.run(() => this.client.del(this.key(id)))) > 0;
  }

  /** Closes the connection; while reconnecting, also waits out the client's retry sleep. */
  async close(): Promise<void> {
    let retrying: Promise<void> | undefined;
    if (this.client.isOpen && !this.client.isReady) {
      retrying = new Promise((resolve) => {
        const timer = setTimeout(resolve, RETRY_MAX_MS + 100);
        this.client.once("reconnecting", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    try {
      this.client.destroy();
    } catch {
      // already closed
    }
    await retrying;
  }
}
