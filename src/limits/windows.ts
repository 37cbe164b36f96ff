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
export interface WindowState {
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

/** One counted event of a sliding window: its time and amount. */
export interface Entry {
  at: number;
  n: number;
}

/**
 * A sliding window's state over its entries (oldest first, none older than the window): it
 * frees when enough of the oldest leave to bring it under `limit` (without a limit, when the
 * oldest leaves).
 */
export function sliding(
  entries: readonly Entry[],
  limit: number | undefined,
  now: number,
  length: number,
): WindowState {
  let used = 0;
  for (const e of entries) used += e.n;
  let left = used;
  for (const e of entries) {
    left -= e.n;
    if (limit === undefined || left < limit) return { used, reset: e.at + length };
  }
  return { used, reset: now };
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
