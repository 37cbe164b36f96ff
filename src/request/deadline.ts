/** One re-armable deadline per upstream call, all checked by one shared timer (src/kit/clock.ts). */
import { clock, type Watched } from "../kit/clock.ts";
import { GatewayError } from "../kit/errors.ts";

/**
 * First-byte, then idle deadline for one upstream call. Activity only records a time, so
 * nothing is scheduled per chunk, and a new phase (headers → body) simply replaces the old.
 */
export class Deadline implements Watched {
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
