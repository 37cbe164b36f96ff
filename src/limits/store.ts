/**
 * Where limit windows are counted: in memory (one instance; kept across reloads, keyed by
 * identity name) or in Redis (src/limits/redis.ts, shared by every instance).
 */
import { GatewayError } from "../errors.ts";
import type { Limits } from "./schema.ts";
import {
  day,
  type Entry,
  type LimitName,
  MINUTE_MS,
  month,
  reached,
  sliding,
  type Windows,
} from "./windows.ts";

export interface Admitted {
  /** The limit that refused the request (nothing was counted), if one did. */
  refused?: LimitName;
  /** The windows after this request was counted (or refused). */
  windows: Windows;
}

export interface LimitStore {
  /** Names the store in errors and logs (`memory`, `redis`). */
  readonly name: string;
  /** Atomically: unless one of `limits` has been reached, counts one request. */
  admit(identity: string, limits: Limits, now: number): Promise<Admitted>;
  /** Counts tokens and spend (USD) of an answer; the windows after. */
  record(
    identity: string,
    limits: Limits,
    tokens: number,
    spend: number,
    now: number,
  ): Promise<Windows>;
  read(identity: string, limits: Limits, now: number): Promise<Windows>;
  close(): Promise<void>;
}

/** The store could not be reached: a 503 naming it (`on_error: deny`). */
export function limitsStoreUnavailable(name: string): GatewayError {
  return new GatewayError(503, "overloaded", `the limits store (${name}) is unavailable`);
}

interface Calendar {
  key: string;
  used: number;
}

interface State {
  requests: Entry[];
  tokens: Entry[];
  day: Calendar;
  month: Calendar;
}

export class MemoryLimitStore implements LimitStore {
  readonly name = "memory";
  private readonly states = new Map<string, State>();

  /** `slidingMs`: the sliding windows' length (tests shorten it). */
  constructor(private readonly slidingMs = MINUTE_MS) {}

  admit(identity: string, limits: Limits, now: number): Promise<Admitted> {
    const s = this.state(identity, now);
    const before = this.windows(s, limits, now);
    const refused = reached(limits, before);
    if (refused) return Promise.resolve({ refused, windows: before });
    s.requests.push({ at: now, n: 1 });
    return Promise.resolve({ windows: this.windows(s, limits, now) });
  }

  record(identity: string, limits: Limits, tokens: number, spend: number, now: number) {
    const s = this.state(identity, now);
    if (tokens > 0) {
      s.tokens.push({ at: now, n: tokens });
      s.day.used += tokens;
    }
    s.month.used += spend;
    return Promise.resolve(this.windows(s, limits, now));
  }

  read(identity: string, limits: Limits, now: number): Promise<Windows> {
    return Promise.resolve(this.windows(this.state(identity, now), limits, now));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** The identity's state with what has left its windows dropped. */
  private state(identity: string, now: number): State {
    let s = this.states.get(identity);
    if (!s) {
      s = { requests: [], tokens: [], day: { key: "", used: 0 }, month: { key: "", used: 0 } };
      this.states.set(identity, s);
    }
    const since = now - this.slidingMs;
    for (const list of [s.requests, s.tokens]) {
      const keep = list.findIndex((e) => e.at > since);
      list.splice(0, keep < 0 ? list.length : keep);
    }
    const d = day(now).key;
    if (s.day.key !== d) s.day = { key: d, used: 0 };
    const m = month(now).key;
    if (s.month.key !== m) s.month = { key: m, used: 0 };
    return s;
  }

  private windows(s: State, limits: Limits, now: number): Windows {
    return {
      requests_per_minute: sliding(s.requests, limits.requests_per_minute, now, this.slidingMs),
      tokens_per_minute: sliding(s.tokens, limits.tokens_per_minute, now, this.slidingMs),
      tokens_per_day: { used: s.day.used, reset: day(now).end },
      spend_per_month_usd: { used: s.month.used, reset: month(now).end },
    };
  }
}
