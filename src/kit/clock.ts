/**
 * One shared timer for deadlines (an upstream call's, src/request/deadline.ts; a request body's,
 * src/kit/http.ts). A timer per call is set, then cleared almost every time, and showed on relayed
 * JSON (docs/performance.md); one timer that runs only while something is watched costs a set
 * insertion per call.
 */

/** What the clock checks at each tick: it expires itself once its time has passed. */
export interface Watched {
  check(now: number): void;
}

/** How often watched deadlines are checked: a deadline fires at most this late. */
const TICK_MS = 10;

/** The watched deadlines and the one timer that checks them (stopped when none is watched). */
class Clock {
  private readonly pending = new Set<Watched>();
  private timer?: ReturnType<typeof setTimeout>;

  watch(d: Watched): void {
    this.pending.add(d);
    this.timer ??= setTimeout(this.tick, TICK_MS);
  }

  unwatch(d: Watched): void {
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

export const clock = new Clock();
