/**
 * The four limit windows: two sliding (any 60 seconds) and two calendar windows in UTC. Times
 * are milliseconds since the epoch.
 */
import type { Limits } from "../../config/limits.ts";

export const LIMIT_NAMES = [
  "requests_per_minute",
  "tokens_per_minute",
  "tokens_per_day",
  "spend_per_month_usd",
] as const;

export type LimitName = typeof LIMIT_NAMES[number];

/**
 * One window's state: what it counted, and when it frees (ms). A token window's `used` holds the
 * tokens reserved by its requests in flight (`reserved` of them).
 */
interface WindowState {
  used: number;
  reset: number;
  reserved?: number;
}

export type Windows = Record<LimitName, WindowState>;

export const MINUTE_MS = 60_000;

/** The calendar day (UTC) `now` falls in, as a key, and when it ends. */
export function day(now: number): { key: string; end: number } {
  const d = new Date(now);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return { key: new Date(start).toISOString().slice(0, 10), end: start + 86_400_000 };
}

/** The calendar month (UTC) `now` falls in, as a key, and when it ends. */
export function month(now: number): { key: string; end: number } {
  const d = new Date(now);
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return { key: new Date(now).toISOString().slice(0, 7), end };
}

/** Sliding windows count in buckets of one second: at most 61 a minute, however busy. */
const BUCKET_MS = 1000;

/**
 * A sliding window in memory: buckets of one second, each with the time of its latest entry
 * (so it leaves the window with that entry: never early, at most a second late) and the sum
 * of its amounts, oldest first, and their running sum.
 */
export class SlidingWindow {
  private times: number[] = [];
  private amounts: number[] = [];
  private sum = 0;

  constructor(private readonly length: number) {}

  /** Drops what has left the window by `now`. */
  prune(now: number): void {
    const since = now - this.length;
    let gone = 0;
    while (gone < this.times.length && this.times[gone] <= since) this.sum -= this.amounts[gone++];
    if (gone) {
      this.times.splice(0, gone);
      this.amounts.splice(0, gone);
    }
  }

  /** Takes back `n` counted at `at` (a request refused after all), if it is still in the window. */
  remove(at: number, n: number): void {
    const second = Math.floor(at / BUCKET_MS);
    const i = this.times.findLastIndex((t) => Math.floor(t / BUCKET_MS) === second);
    if (i === -1) return;
    this.amounts[i] -= n;
    this.sum -= n;
    if (this.amounts[i] > 0) return;
    this.sum -= this.amounts[i];
    this.times.splice(i, 1);
    this.amounts.splice(i, 1);
  }

  add(at: number, n: number): void {
    const last = this.times.length - 1;
    if (last >= 0 && Math.floor(this.times[last] / BUCKET_MS) === Math.floor(at / BUCKET_MS)) {
      this.times[last] = at;
      this.amounts[last] += n;
    } else {
      this.times.push(at);
      this.amounts.push(n);
    }
    this.sum += n;
  }

  /**
   * What it counts, and when it frees: when enough of the oldest buckets leave to bring it
   * under `limit` (without a limit, or under it, when the oldest leaves; empty: now).
   */
  state(limit: number | undefined, now: number): WindowState {
    let left = this.sum;
    for (let i = 0; i < this.times.length; i++) {
      left -= this.amounts[i];
      if (limit === undefined || left < limit) {
        return { used: this.sum, reset: this.times[i] + this.length };
      }
    }
    return { used: this.sum, reset: now };
  }
}

/**
 * How long a client refused for tokens in flight waits: they settle when their answers end,
 * which the window cannot know.
 */
export const IN_FLIGHT_RETRY_MS = 1000;

/**
 * The tokens reserved by requests in flight (`reserved`), added to a token window: they count
 * as used until they settle. A window reached only by them frees when they end: it says so as
 * `reset` a second away (the retry), not at its own end (a day's midnight).
 */
export function withReserved(
  state: WindowState,
  reserved: number,
  limit: number | undefined,
  now: number,
): WindowState {
  if (!reserved) return state;
  const used = state.used + reserved;
  const byInFlight = limit !== undefined && state.used < limit && used >= limit;
  return { used, reset: byInFlight ? now + IN_FLIGHT_RETRY_MS : state.reset, reserved };
}

/**
 * Which of `limits` refuses, if any has been reached: the one that frees last, so that the
 * refusal says how long the wait really is (a spent day budget, not the minute's pace).
 */
export function reached(limits: Limits, windows: Windows): LimitName | undefined {
  let last: LimitName | undefined;
  for (const name of LIMIT_NAMES) {
    const limit = limits[name];
    if (limit === undefined || windows[name].used < limit) continue;
    if (last === undefined || windows[name].reset > windows[last].reset) last = name;
  }
  return last;
}
