/** One re-armable deadline per upstream call (no timer per chunk). */
import { GatewayError } from "./errors.ts";

/**
 * First-byte, then idle deadline for one upstream body. Activity only records a time; the
 * single timer re-arms itself for the remainder when it fires early, so no timer is created
 * per chunk.
 */
export class Deadline {
  private since = 0;
  private ms = 0;
  private what = "";
  private timer?: ReturnType<typeof setTimeout>;

  constructor(private readonly expire: (err: GatewayError) => void) {}

  arm(ms: number, what: string): void {
    clearTimeout(this.timer);
    this.ms = ms;
    this.what = what;
    this.since = performance.now();
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
    if (left > 1) {
      this.timer = setTimeout(() => this.check(), left);
      return;
    }
    this.timer = undefined;
    this.expire(new GatewayError(504, "timeout", `upstream ${this.what} within ${this.ms} ms`));
  }
}
