/** One re-armable deadline per upstream call (no timer per chunk, nor per phase). */
import { GatewayError } from "./errors.ts";

/**
 * First-byte, then idle deadline for one upstream call. Activity only records a time; the
 * single timer re-arms itself for the remainder when it fires early, so no timer is created
 * per chunk, and a new phase (headers → body) keeps a pending timer that is not too late.
 */
export class Deadline {
  private since = 0;
  private ms = 0;
  private what = "";
  private timer?: ReturnType<typeof setTimeout>;
  /** When the pending timer fires (performance.now() time). */
  private fireAt = 0;

  constructor(private readonly expire: (err: GatewayError) => void) {}

  arm(ms: number, what: string): void {
    this.ms = ms;
    this.what = what;
    this.since = performance.now();
    // A pending timer that fires by the new due time will find the remainder and re-arm.
    if (this.timer !== undefined && this.fireAt <= this.since + ms) return;
    this.schedule(ms);
  }

  private schedule(ms: number) {
    clearTimeout(this.timer);
    this.fireAt = performance.now() + ms;
    this.timer = setTimeout(() => this.check(), ms);
  }

  touch(): void {
    this.since = performance.now();
  }

  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private check() {
    const left = this.ms - (performance.now() - this.since);
    if (left > 1) return this.schedule(left);
    this.timer = undefined;
    this.expire(new GatewayError(504, "timeout", `upstream ${this.what} within ${this.ms} ms`));
  }
}
