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
    // A window without a limit is not kept: nothing would read it.
    if (limits.requests_per_minute !== undefined) s.requests.add(now, 1);
    const requests = s.requests.state(limits.requests_per_minute, now);
    return Promise.resolve({ windows: { ...before, requests_per_minute: requests } });
  }

  record(identity: string, limits: Limits, tokens: number, spend: number, now: number) {
    const s = this.state(identity, now);
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
      };
      this.states.set(identity, s);
    }
    s.requests.prune(now);
    s.tokens.prune(now);
    if (now >= s.day.end) s.day = { end: day(now).end, used: 0 };
    if (now >= s.month.end) s.month = { end: month(now).end, used: 0 };
    return s;
  }

  private windows(s: State, limits: Limits, now: number): Windows {
    return {
      requests_per_minute: s.requests.state(limits.requests_per_minute, now),
      tokens_per_minute: s.tokens.state(limits.tokens_per_minute, now),
      tokens_per_day: { used: s.day.used, reset: s.day.end },
      spend_per_month_usd: { used: s.month.used, reset: s.month.end },
    };
  }
}
