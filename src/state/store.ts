/**
 * Stored conversations: one record per answer the gateway built and kept, with the whole input
 * the model saw, so a later request can continue it by naming that answer's id and a client can
 * read it back. Records of every format share the store; each format makes ids of its own shape
 * and looks up only those (the plugins use it through `HandlerContext.conversations`,
 * src/request/conversations.ts). Each record belongs to the client key that made it; a lookup by
 * another key finds nothing. The embedded store keeps records in memory, bounded by size (oldest
 * evicted first, and each key within its share: a key past it evicts its own oldest) and age
 * (under `workers`, one in the supervisor thread: src/state/shared_stores.ts); `redis_url` or
 * `redis_cluster` puts them in Redis instead (src/state/store_redis.ts) so instances share them.
 * Nothing here logs a record's content.
 */
import type { ResponseStoreConfig } from "../config/config.ts";
import type { StoredTurn } from "../kit/conversations.ts";
import { GatewayError } from "../kit/errors.ts";
import { answerOf, recordOf, recordText } from "./record_text.ts";

export type { StoredTurn };

/** What `put` did: kept, or why not. */
export type PutResult = "kept" | "too_large" | "taken";

export interface ConversationStore {
  /** Names the store in errors and logs (`memory`, `redis`). */
  readonly name: string;
  /** The record, if it exists, has not expired and belongs to `owner`. */
  get(id: string, owner: string): Promise<StoredTurn | undefined>;
  /**
   * The answer of the record `get` would find, as the JSON text it was kept as (byte for byte;
   * the record's input is not parsed): what a GET of a stored answer sends.
   */
  answer(id: string, owner: string): Promise<string | undefined>;
  put(record: StoredTurn): Promise<PutResult>;
  /** True if a record of `owner` was deleted. */
  delete(id: string, owner: string): Promise<boolean>;
  close(): Promise<void>;
}

const MB = 1024 * 1024;

/** The characters one client key may hold: `max_mb_per_key`, by default a quarter of `max_mb`. */
export function keyShare(cfg: Pick<ResponseStoreConfig, "max_mb" | "max_mb_per_key">): number {
  return Math.min(cfg.max_mb_per_key ?? cfg.max_mb / 4, cfg.max_mb) * MB;
}

/** The largest record kept: `max_item_mb`, and never more than a key's share. */
export function maxItem(
  cfg: Pick<ResponseStoreConfig, "max_mb" | "max_mb_per_key" | "max_item_mb">,
) {
  return Math.min(cfg.max_item_mb * MB, keyShare(cfg));
}

/** The store could not be reached: 503 in the client's dialect, naming the store. */
export function storeUnavailable(name: string, cause?: unknown): GatewayError {
  const why = cause instanceof Error ? `: ${cause.message}` : "";
  return new GatewayError(503, "overloaded", `the response store (${name}) is unavailable${why}`);
}

interface Entry {
  owner: string;
  text: string;
  expires: number;
}

/** The embedded store: in memory, per instance. Sizes count the records' text characters. */
export class MemoryStore implements ConversationStore {
  readonly name = "memory";
  /** Insertion order is age order: the first entry is the oldest. */
  private readonly entries = new Map<string, Entry>();
  /** Each owner's ids, oldest first, and the characters they hold. */
  private readonly owners = new Map<string, { ids: Set<string>; size: number }>();
  private size = 0;
  private readonly maxSize: number;
  private readonly maxPerKey: number;
  private readonly maxItem: number;
  private readonly ttlMs: number;

  constructor(
    cfg: Pick<ResponseStoreConfig, "max_mb" | "max_mb_per_key" | "max_item_mb" | "ttl_s">,
    private readonly now: () => number = Date.now,
  ) {
    this.maxSize = cfg.max_mb * MB;
    this.maxPerKey = keyShare(cfg);
    this.maxItem = maxItem(cfg);
    this.ttlMs = cfg.ttl_s * 1000;
  }

  get(id: string, owner: string): Promise<StoredTurn | undefined> {
    const text = this.getText(id, owner);
    return Promise.resolve(text === undefined ? undefined : recordOf(text));
  }

  answer(id: string, owner: string): Promise<string | undefined> {
    const text = this.getText(id, owner);
    return Promise.resolve(text === undefined ? undefined : answerOf(text)?.answer);
  }

  put(record: StoredTurn): Promise<PutResult> {
    return Promise.resolve(this.putText(record.id, record.owner, recordText(record)));
  }

  /** A record as kept, its text (src/state/record_text.ts; the threads of `workers` read it). */
  getText(id: string, owner: string): string | undefined {
    const e = this.live(id);
    return e?.owner === owner ? e.text : undefined;
  }

  /** Keeps a record given as its text (the threads of `workers` make it themselves). */
  putText(id: string, owner: string, text: string): PutResult {
    if (text.length > this.maxItem) return "too_large";
    const before = this.live(id);
    if (before && before.owner !== owner) return "taken";
    if (before) this.remove(id, before);
    this.evictOwn(owner, text.length);
    this.evict(text.length);
    this.entries.set(id, { owner, text, expires: this.now() + this.ttlMs });
    const own = this.ownerOf(owner);
    own.ids.add(id);
    own.size += text.length;
    this.size += text.length;
    return "kept";
  }

  delete(id: string, owner: string): Promise<boolean> {
    const e = this.live(id);
    if (!e || e.owner !== owner) return Promise.resolve(false);
    this.remove(id, e);
    return Promise.resolve(true);
  }

  close(): Promise<void> {
    this.entries.clear();
    this.owners.clear();
    this.size = 0;
    return Promise.resolve();
  }

  /** Characters held (the records' text), for tests. */
  get bytes(): number {
    return this.size;
  }

  private live(id: string): Entry | undefined {
    const e = this.entries.get(id);
    if (e && e.expires <= this.now()) {
      this.remove(id, e);
      return undefined;
    }
    return e;
  }

  private ownerOf(owner: string) {
    let own = this.owners.get(owner);
    if (!own) this.owners.set(owner, own = { ids: new Set(), size: 0 });
    return own;
  }

  private remove(id: string, e: Entry) {
    this.entries.delete(id);
    this.size -= e.text.length;
    const own = this.owners.get(e.owner)!;
    own.ids.delete(id);
    own.size -= e.text.length;
    if (own.ids.size === 0) this.owners.delete(e.owner);
  }

  /** Drops the owner's oldest until its `incoming` more characters fit in its share. */
  private evictOwn(owner: string, incoming: number) {
    const own = this.owners.get(owner);
    for (const id of own?.ids ?? []) {
      if (own!.size + incoming <= this.maxPerKey) break;
      this.remove(id, this.entries.get(id)!);
    }
  }

  /** Drops expired entries, then the oldest, until `incoming` more characters fit. */
  private evict(incoming: number) {
    const now = this.now();
    for (const [id, e] of this.entries) {
      if (e.expires > now && this.size + incoming <= this.maxSize) break;
      this.remove(id, e);
    }
  }
}
