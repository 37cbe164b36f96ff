/**
 * Stored responses in Redis (`response_store.redis_url`): one key per response under
 * `redis_prefix`, its TTL set in Redis, so every instance behind one Kong upstream sees the
 * same responses and they survive restarts. While Redis is unreachable, commands fail at once
 * (no offline queue), and a stalled Redis fails them after `redis_timeout_ms`: callers answer
 * 503 naming the store; the client reconnects by itself. A value that is not a record is taken
 * for missing. Errors are logged without content: at most the Redis key.
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
/** A key holding another Redis type (a hash, a list) has no record: GARBAGE, not an outage. */
const GARBAGE = Symbol("garbage");

function wrongTypeIsGarbage(e: unknown): typeof GARBAGE {
  if (e instanceof Error && e.message.startsWith("WRONGTYPE")) return GARBAGE;
  throw e;
}

/** A stored record, if `json` is one (parsed, and of the record's shape). */
function recordOf(json: string): StoredResponse | undefined {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    return undefined;
  }
  const r = v as Partial<StoredResponse> | null;
  const ok = typeof r === "object" && r !== null && typeof r.id === "string" &&
    typeof r.owner === "string" && Array.isArray(r.input) &&
    typeof r.response === "object" && r.response !== null && !Array.isArray(r.response);
  return ok ? r as StoredResponse : undefined;
}

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

  /** One command, within `redis_timeout_ms`; any failure is the store's 503. */
  private async run<T>(op: () => Promise<T>): Promise<T> {
    if (!this.client.isReady) throw storeUnavailable(this.name);
    const ms = this.cfg.redis_timeout_ms;
    const timeout = new Error(`no answer within ${ms} ms`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timeout), ms);
    });
    try {
      return await Promise.race([op(), late]);
    } catch (e) {
      this.logError(e);
      // Said to the client when it timed out; Redis's own errors stay in the log.
      throw storeUnavailable(this.name, e === timeout ? e : undefined);
    } finally {
      clearTimeout(timer);
    }
  }

  async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    const key = this.key(id);
    const json = await this.run(() => this.client.get(key).catch(wrongTypeIsGarbage));
    if (json === null) return undefined;
    const record = typeof json === "string" ? recordOf(json) : undefined;
    if (!record) {
      // Written by something else, or corrupted: missing. Its characters are never printed.
      console.error(JSON.stringify({
        level: "warn",
        msg: "response store: unreadable record, taken for missing",
        store: "redis",
        key,
      }));
      return undefined;
    }
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
