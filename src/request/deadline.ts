/** One re-armable deadline per upstream call, all checked by one shared timer. */
import { GatewayError } from "../kit/errors.ts";

/**
 * How often pending deadlines are checked: a deadline fires at most this late. A timer per
 * call is set, then cleared almost every time, and showed on relayed JSON (docs/performance.md);
 * one timer that runs only while some call is pending costs a set insertion.
 */
const TICK_MS = 10;

/** The pending deadlines and the one timer that checks them (stopped when none is pending). */
class Clock {
  private readonly pending = new Set<Deadline>();
  private timer?: ReturnType<typeof setTimeout>;

  watch(d: Deadline): void {
    this.pending.add(d);
    this.timer ??= setTimeout(this.tick, TICK_MS);
  }

  unwatch(d: Deadline): void {
    this.pending.delete(d);
    // Stopped at once when idle: no timer outlives the calls it watched.
    if (this.pending.size === 0 && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private readonly tick = () => {
    this.timer = undefined;
    const now = performance.now();
    for (const d of this.pending) d.check(now);
    if (this.pending.size > 0) this.timer = setTimeout(this.tick, TICK_MS);
  };
}

const clock = new Clock();

/**
 * First-byte, then idle deadline for one upstream call. Activity only records a time, so
 * nothing is scheduled per chunk, and a new phase (headers → body) simply replaces the old.
 */
export class Deadline {
  private since = 0;
  private ms = 0;
  private what = "";

  constructor(private readonly expire: (err: GatewayError) => void) {}

  arm(ms: number, what: string): void {
    this.ms = ms;
    this.what = what;
    this.since = performance.now();
    clock.watch(this);
  }

  touch(): void {
    this.since = performance.now();
  }

  clear(): void {
    clock.unwatch(this);
  }

  /** Called by the clock: expires once the phase's time has passed without activity. */
  check(now: number): void {
    if (now - this.since < this.ms) return;
    this.clear();
    this.expire(new GatewayError(504, "timeout", `upstream ${this.what} within ${this.ms} ms`));
  }
}
