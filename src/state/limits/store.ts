/**
 * Where limit windows are counted: in memory (one instance; kept across reloads, keyed by
 * identity name) or in Redis (src/state/limits/redis.ts, shared by every instance).
 */
import type { Limits } from "../../config/limits.ts";
import {
  day,
  type LimitName,
  MINUTE_MS,
  month,
  reached,
  SlidingWindow,
  type Windows,
  withReserved,
} from "./windows.ts";

export interface Admitted {
  /** The limit that refused the request (nothing was counted), if one did. */
  refused?: LimitName;
  /** The windows after this request was counted (or refused). */
  windows: Windows;
  /** When it was counted, on the store's clock (a reservation refused takes it back). */
  at: number;
}

/**
 * How long a reservation holds at most, in every store: one whose request never reports its end
 * (an instance, or a thread of `workers`, that died) lapses then, so it cannot hold an
 * identity's token windows for good (a longer answer's lapses early; it is still counted at its
 * end).
 */
export const RESERVATION_TTL_MS = 10 * 60_000;

/** Tokens held for a request in flight until its usage is counted (docs/limits.md). */
export interface Reservation {
  /** Unique among the identity's reservations. */
  id: string;
  tokens: number;
  /** When its request was admitted (`Admitted.at`). */
  admittedAt: number;
}

export interface LimitStore {
  /** Names the store in errors and logs (`memory`, `redis`). */
  readonly name: string;
  /**
   * Atomically: unless one of `limits` has been reached (a token window's reservations
   * counting as used), counts one request.
   */
  admit(identity: string, limits: Limits, now: number): Promise<Admitted>;
  /**
   * Atomically: unless a token window has been reached, its reservations counting, holds `r`
   * in both; else takes back the request admitted at `r.admittedAt` (a refusal counts nothing).
   */
  reserve(identity: string, limits: Limits, r: Reservation, now: number): Promise<Admitted>;
  /**
   * Counts tokens and spend (USD) of an answer, and lets its reservation go; the windows
   * after.
   */
  record(
    identity: string,
    limits: Limits,
    tokens: number,
    spend: number,
    now: number,
    release?: Reservation,
  ): Promise<Windows>;
  read(identity: string, limits: Limits, now: number): Promise<Windows>;
  close(): Promise<void>;
}

/** A calendar window's count, until `end`. */
interface Calendar {
  end: number;
  used: number;
}

interface State {
  requests: SlidingWindow;
  tokens: SlidingWindow;
  day: Calendar;
  month: Calendar;
  /** Tokens reserved by requests in flight, and when each lapses, by reservation id. */
  reserved: Map<string, { tokens: number; lapses: number }>;
}

/** The token windows' limits, if the identity has any (else nothing is reserved). */
export const tokenLimited = (limits: Limits) =>
  limits.tokens_per_minute !== undefined || limits.tokens_per_day !== undefined;

export class MemoryLimitStore implements LimitStore {
  readonly name = "memory";
  private readonly states = new Map<string, State>();

  /** `slidingMs`: the sliding windows' length (tests shorten it). */
  constructor(private readonly slidingMs = MINUTE_MS) {}

  admit(identity: string, limits: Limits, now: number): Promise<Admitted> {
    const s = this.state(identity, now);
    const before = this.windows(s, limits, now);
    const refused = reached(limits, before);
    if (refused) return Promise.resolve({ refused, windows: before, at: now });
    // A window without a limit is not kept: nothing would read it.
    if (limits.requests_per_minute !== undefined) s.requests.add(now, 1);
    const requests = s.requests.state(limits.requests_per_minute, now);
    return Promise.resolve({ windows: { ...before, requests_per_minute: requests }, at: now });
  }

  reserve(identity: string, limits: Limits, r: Reservation, now: number): Promise<Admitted> {
    const s = this.state(identity, now);
    const before = this.windows(s, limits, now);
    const refused = reached({
      tokens_per_minute: limits.tokens_per_minute,
      tokens_per_day: limits.tokens_per_day,
    }, before);
    if (refused) {
      if (limits.requests_per_minute !== undefined) s.requests.remove(r.admittedAt, 1);
      return Promise.resolve({ refused, windows: this.windows(s, limits, now), at: now });
    }
    s.reserved.set(r.id, { tokens: r.tokens, lapses: now + RESERVATION_TTL_MS });
    return Promise.resolve({ windows: this.windows(s, limits, now), at: now });
  }

  record(
    identity: string,
    limits: Limits,
    tokens: number,
    spend: number,
    now: number,
    release?: Reservation,
  ) {
    const s = this.state(identity, now);
    if (release) s.reserved.delete(release.id);
    if (tokens > 0) {
      if (limits.tokens_per_minute !== undefined) s.tokens.add(now, tokens);
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
      s = {
        requests: new SlidingWindow(this.slidingMs),
        tokens: new SlidingWindow(this.slidingMs),
        day: { end: 0, used: 0 },
        month: { end: 0, used: 0 },
        reserved: new Map(),
      };
      this.states.set(identity, s);
    }
    s.requests.prune(now);
    s.tokens.prune(now);
    if (now >= s.day.end) s.day = { end: day(now).end, used: 0 };
    if (now >= s.month.end) s.month = { end: month(now).end, used: 0 };
    for (const [id, { lapses }] of s.reserved) if (now >= lapses) s.reserved.delete(id);
    return s;
  }

  private windows(s: State, limits: Limits, now: number): Windows {
    let reserved = 0;
    for (const { tokens } of s.reserved.values()) reserved += tokens;
    const tokens = s.tokens.state(limits.tokens_per_minute, now);
    const daily = { used: s.day.used, reset: s.day.end };
    return {
      requests_per_minute: s.requests.state(limits.requests_per_minute, now),
      tokens_per_minute: withReserved(tokens, reserved, limits.tokens_per_minute, now),
      tokens_per_day: withReserved(daily, reserved, limits.tokens_per_day, now),
      spend_per_month_usd: { used: s.month.used, reset: s.month.end },
    };
  }
}
