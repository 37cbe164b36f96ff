/**
 * Stored conversations in Redis (`response_store.redis_url`, or a Redis Cluster:
 * `redis_cluster`): one key per record under `redis_prefix`, its TTL set in Redis, so every
 * instance behind one Kong upstream sees the same records and they survive restarts. Every key
 * of one owner (a client key's name) carries the owner as its hash tag — its records and the
 * booking of their sizes — so each script touches one slot of a cluster. While Redis is
 * unreachable, commands fail at once (no offline queue), and a stalled Redis fails them after
 * `redis_timeout_ms`: callers answer 503 naming the store; the client reconnects by itself. A
 * value that is not a record is taken for missing. Errors are logged without content: at most
 * the Redis key.
 */
import { type RedisLink, RedisTimeout } from "./redis_client.ts";
import { connectRedis } from "./redis_link.ts";
import type { ResponseStoreConfig } from "../config/config.ts";
import {
  type ConversationStore,
  keyShare,
  maxItem,
  type PutResult,
  type StoredTurn,
  storeUnavailable,
} from "./store.ts";
import { answerOf, recordOf, recordOwner, recordText } from "./record_text.ts";

/**
 * Keeps a record (unless its id exists) and books it to its owner: a sorted set of the owner's
 * ids by age and a hash of their sizes (field "" holds the total). An owner past its share loses
 * its own oldest records. KEYS: record, owner's ids, owner's sizes; ARGV: json, ttl, id, now,
 * size, share, the owner's record keys' prefix. Returns 1 when kept, 0 when the id was taken.
 */
const PUT = `
if not redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2], 'NX') then return 0 end
local id, size, share = ARGV[3], tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[4], id)
redis.call('HSET', KEYS[3], id, size)
local total = redis.call('HINCRBY', KEYS[3], '', size)
while total > share do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not oldest or oldest == id then break end
  local s = tonumber(redis.call('HGET', KEYS[3], oldest) or '0')
  redis.call('DEL', ARGV[7] .. oldest)
  redis.call('ZREM', KEYS[2], oldest)
  redis.call('HDEL', KEYS[3], oldest)
  total = redis.call('HINCRBY', KEYS[3], '', -s)
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[2])
return 1`;

/**
 * Deletes a record and its booking. KEYS as PUT's (or a record's kept before owners' hash tags,
 * on one Redis); ARGV: id. Returns the records deleted.
 */
const DELETE = `
local n = redis.call('DEL', KEYS[1])
local s = redis.call('HGET', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if s then
  redis.call('HDEL', KEYS[3], ARGV[1])
  redis.call('HINCRBY', KEYS[3], '', -tonumber(s))
end
return n`;
/** A key holding another Redis type (a hash, a list) has no record: GARBAGE, not an outage. */
const GARBAGE = Symbol("garbage");

function wrongTypeIsGarbage(e: unknown): typeof GARBAGE {
  if (e instanceof Error && e.message.startsWith("WRONGTYPE")) return GARBAGE;
  throw e;
}

export class RedisStore implements ConversationStore {
  readonly name = "redis";
  private lastLogged = 0;

  private constructor(
    private readonly link: RedisLink,
    private readonly cfg: ResponseStoreConfig,
  ) {}

  /** Starts connecting; the gateway starts even if Redis is down. */
  static connect(cfg: ResponseStoreConfig): RedisStore {
    let store: RedisStore | undefined;
    const link = connectRedis(cfg, (e) => store?.logError(e));
    return store = new RedisStore(link, cfg);
  }

  /** At most one line per 5 s: the error's name and message, never a key or a record. */
  private logError(e: unknown) {
    const now = Date.now();
    if (now - this.lastLogged < 5000) return;
    this.lastLogged = now;
    const error = e instanceof Error ? `${e.name}: ${e.message}` : "unknown error";
    console.error(JSON.stringify({ level: "error", msg: "response store", store: "redis", error }));
  }

  /** Where an owner's keys begin: its hash tag keeps them in one slot of a cluster. */
  private ownerPrefix(owner: string) {
    return `${this.cfg.redis_prefix}{${owner}}:`;
  }

  /** A record's key and its owner's booking keys: one hash tag, one slot. */
  private keys(id: string, owner: string): string[] {
    const p = this.ownerPrefix(owner);
    return [`${p}r:${id}`, `${p}ids`, `${p}sizes`];
  }

  /**
   * The keys a record had before owners' hash tags (`<prefix><id>`, bookings by owner): still
   * read, and deleted, on one Redis until they expire; a cluster never had them.
   */
  private legacyKeys(id: string, owner: string): string[] | undefined {
    if (this.cfg.redis_cluster) return undefined;
    const p = this.cfg.redis_prefix;
    return [p + id, `${p}owner-ids:${owner}`, `${p}owner-sizes:${owner}`];
  }

  /** One command, within `redis_timeout_ms`; any failure is the store's 503. */
  private async run<T>(op: (ms: number) => Promise<T>): Promise<T> {
    if (!this.link.isReady) throw storeUnavailable(this.name);
    try {
      return await op(this.cfg.redis_timeout_ms);
    } catch (e) {
      this.logError(e);
      // Said to the client when it timed out; Redis's own errors stay in the log.
      throw storeUnavailable(this.name, e instanceof RedisTimeout ? e : undefined);
    }
  }

  async get(id: string, owner: string): Promise<StoredTurn | undefined> {
    return (await this.find(id, owner, recordOf))?.found;
  }

  async answer(id: string, owner: string): Promise<string | undefined> {
    return (await this.find(id, owner, answerOf))?.found.answer;
  }

  /**
   * What `read` takes of the record kept for `id` (today's keys, else a record kept before
   * them), if it is `owner`'s; and the keys it is kept under.
   */
  private async find<T extends { owner: string }>(
    id: string,
    owner: string,
    read: (text: string) => T | undefined,
  ): Promise<{ found: T; keys: string[] } | undefined> {
    for (const keys of [this.keys(id, owner), this.legacyKeys(id, owner)]) {
      if (!keys) continue;
      const text = await this.run((ms) => this.link.get(keys[0], ms).catch(wrongTypeIsGarbage));
      if (text === null) continue;
      const found = typeof text === "string" ? read(text) : undefined;
      if (!found) {
        // Written by something else, or corrupted: missing. Its characters are never printed.
        console.error(JSON.stringify({
          level: "warn",
          msg: "response store: unreadable record, taken for missing",
          store: "redis",
          key: keys[0],
        }));
        return undefined;
      }
      return found.owner === owner ? { found, keys } : undefined;
    }
    return undefined;
  }

  async put(record: StoredTurn): Promise<PutResult> {
    const text = recordText(record);
    if (text.length > maxItem(this.cfg)) return "too_large";
    const { id, owner } = record;
    const args = [text, this.cfg.ttl_s, id, Date.now(), text.length, keyShare(this.cfg)];
    const keys = this.keys(id, owner);
    const kept = await this.run((ms) =>
      this.link.eval(PUT, keys, [...args.map(String), keys[0].slice(0, -id.length)], ms)
    );
    return kept === 1 ? "kept" : "taken";
  }

  async delete(id: string, owner: string): Promise<boolean> {
    const kept = await this.find(id, owner, recordOwner);
    if (!kept) return false;
    const n = await this.run((ms) => this.link.eval(DELETE, kept.keys, [id], ms));
    return Number(n) > 0;
  }

  close(): Promise<void> {
    return this.link.close();
  }
}
