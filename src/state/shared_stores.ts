/**
 * The in-memory stores of a gateway of several threads (`workers`, no Redis): the supervisor
 * thread keeps one limit store and one conversation store, and every gateway thread calls them
 * by message, so limits and stored conversations stay exact across threads as in one process.
 * A call is a message round trip (tens of µs), paid only by limited identities and kept answers.
 * A conversation travels as its text (src/state/record_text.ts), made and read in the gateway
 * threads: the supervisor, one thread serving them all, only books it (a text is copied whole, an
 * object walked twice).
 */
import type { ResponseStoreConfig } from "../config/config.ts";
import type { Limits } from "../config/limits.ts";
import {
  type Admitted,
  type LimitStore,
  MemoryLimitStore,
  type Reservation,
} from "./limits/store.ts";
import type { Windows } from "./limits/windows.ts";
import { type ConversationStore, MemoryStore, type PutResult, type StoredTurn } from "./store.ts";
import { answerOf, recordOf, recordText } from "./record_text.ts";

/** A call on a store the supervisor keeps for every thread (below). */
export interface StoreCall {
  t: "call";
  id: number;
  /** `pins`: src/request/pins.ts, answered by the supervisor (src/workers.ts). */
  store: "limits" | "conversations" | "pins";
  op: string;
  args: unknown[];
}

/** The supervisor's side: the stores themselves, answering the threads' calls. */
export class SharedStores {
  private readonly limits = new MemoryLimitStore();
  private readonly conversations: MemoryStore;
  /** Calls answered so far: what requests cost the supervisor (tests check a plain one's none). */
  calls = 0;

  constructor(cfg: ResponseStoreConfig) {
    this.conversations = new MemoryStore(cfg);
  }

  /** The call's answer (a rejection carries the store's error). */
  answer({ store, op, args }: StoreCall): Promise<unknown> {
    this.calls++;
    // deno-lint-ignore no-explicit-any
    const a = args as any[];
    if (store === "limits") {
      if (op === "admit") return this.limits.admit(a[0], a[1], a[2]);
      if (op === "reserve") return this.limits.reserve(a[0], a[1], a[2], a[3]);
      if (op === "record") return this.limits.record(a[0], a[1], a[2], a[3], a[4], a[5]);
      if (op === "read") return this.limits.read(a[0], a[1], a[2]);
    } else {
      if (op === "get") return Promise.resolve(this.conversations.getText(a[0], a[1]));
      if (op === "put") return Promise.resolve(this.conversations.putText(a[0], a[1], a[2]));
      if (op === "delete") return this.conversations.delete(a[0], a[1]);
    }
    return Promise.reject(new Error(`no such store call: ${store}.${op}`));
  }
}

/** Sends a store call to the supervisor and waits for its reply. */
export type Call = (store: StoreCall["store"], op: string, args: unknown[]) => Promise<unknown>;

/** A gateway thread's limit store: the supervisor's, by message. */
export class SharedLimitStore implements LimitStore {
  readonly name = "memory";

  constructor(private readonly call: Call) {}

  admit(identity: string, limits: Limits, now: number): Promise<Admitted> {
    return this.call("limits", "admit", [identity, limits, now]) as Promise<Admitted>;
  }

  reserve(identity: string, limits: Limits, r: Reservation, now: number): Promise<Admitted> {
    return this.call("limits", "reserve", [identity, limits, r, now]) as Promise<Admitted>;
  }

  record(
    identity: string,
    limits: Limits,
    tokens: number,
    spend: number,
    now: number,
    release?: Reservation,
  ): Promise<Windows> {
    return this.call("limits", "record", [
      identity,
      limits,
      tokens,
      spend,
      now,
      release,
    ]) as Promise<
      Windows
    >;
  }

  read(identity: string, limits: Limits, now: number): Promise<Windows> {
    return this.call("limits", "read", [identity, limits, now]) as Promise<Windows>;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A gateway thread's conversation store: the supervisor's, by message. */
export class SharedConversationStore implements ConversationStore {
  readonly name = "memory";

  constructor(private readonly call: Call) {}

  async get(id: string, owner: string): Promise<StoredTurn | undefined> {
    const text = await this.text(id, owner);
    return text === undefined ? undefined : recordOf(text);
  }

  async answer(id: string, owner: string): Promise<string | undefined> {
    const text = await this.text(id, owner);
    return text === undefined ? undefined : answerOf(text)?.answer;
  }

  private text(id: string, owner: string) {
    return this.call("conversations", "get", [id, owner]) as Promise<string | undefined>;
  }

  put(record: StoredTurn): Promise<PutResult> {
    const text = recordText(record);
    return this.call("conversations", "put", [record.id, record.owner, text]) as Promise<PutResult>;
  }

  delete(id: string, owner: string): Promise<boolean> {
    return this.call("conversations", "delete", [id, owner]) as Promise<boolean>;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
