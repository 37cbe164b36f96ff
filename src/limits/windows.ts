/**
 * The four limit windows: two sliding (any 60 seconds) and two calendar windows in UTC. Times
 * are milliseconds since the epoch.
 */
import type { Limits } from "./schema.ts";

export const LIMIT_NAMES = [
  "requests_per_minute",
  "tokens_per_minute",
  "tokens_per_day",
  "spend_per_month_usd",
] as const;

export type LimitName = typeof LIMIT_NAMES[number];

/** One window's state: what it counted, and when it frees (ms). */
interface WindowState {
  used: number;
  reset: number;
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

/**
 * A sliding window in memory: its entries' times and amounts, oldest first, and their running
 * sum. Two arrays of numbers rather than an object per entry: a busy window holds a minute of
 * requests, which the garbage collector would otherwise walk again and again.
 */
export class SlidingWindow {
  private times: number[] = [];
  private amounts: number[] = [];
  /** Entries before `head` have left the window (dropped in batches, not one shift each). */
  private head = 0;
  private sum = 0;

  constructor(private readonly length: number) {}

  /** Drops what has left the window by `now`. */
  prune(now: number): void {
    const since = now - this.length;
    const { times, amounts } = this;
    while (this.head < times.length && times[this.head] <= since) this.sum -= amounts[this.head++];
    if (this.head > 1024 && this.head * 2 > times.length) {
      this.times = times.slice(this.head);
      this.amounts = amounts.slice(this.head);
      this.head = 0;
    }
  }

  add(at: number, n: number): void {
    this.times.push(at);
    this.amounts.push(n);
    this.sum += n;
  }

  /**
   * What it counts, and when it frees: when enough of the oldest entries leave to bring it
   * under `limit` (without a limit, or under it, when the oldest leaves; empty: now).
   */
  state(limit: number | undefined, now: number): WindowState {
    let left = this.sum;
    for (let i = this.head; i < this.times.length; i++) {
      left -= this.amounts[i];
      if (limit === undefined || left < limit) {
        return { used: this.sum, reset: this.times[i] + this.length };
      }
    }
    return { used: this.sum, reset: now };
  }
}

/** The first of `limits` whose window has reached it, if any. */
export function reached(limits: Limits, windows: Windows): LimitName | undefined {
  return LIMIT_NAMES.find((name) => {
    const limit = limits[name];
    return limit !== undefined && windows[name].used >= limit;
  });
}

/** A duration as OpenAI's headers write it: `1s`, `6m0s`, `2h3m4s` (seconds rounded up). */
export function goDuration(ms: number): string {
  let s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}
