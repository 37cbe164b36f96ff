/**
 * What a client WebSocket may leave unread. Every frame sent to a client that does not read stays
 * in the gateway's memory (the socket's `bufferedAmount`), and Deno's WebSocket cannot stop
 * reading the provider's socket that feeds it: so a converted response waits while the backlog
 * is over BACKLOG_BYTES (its upstream HTTP stream is then not read), and a socket whose backlog
 * passes MAX_BACKLOG_BYTES, or stays over BACKLOG_BYTES for BACKLOG_GRACE_MS, is given up.
 */

/** Past this much unsent, converted responses stop pulling from their provider. */
const BACKLOG_BYTES = 1024 * 1024;
/** Past this much unsent (a provider socket's frames keep coming), the client is given up. */
const MAX_BACKLOG_BYTES = 16 * 1024 * 1024;
/** How long a backlog may stay over BACKLOG_BYTES. */
const BACKLOG_GRACE_MS = 30_000;

/** How often a waiting response looks at the backlog again (Deno fires no "drain" event). */
const POLL_MS = 20;

/** The close reason the client gets. */
export const NOT_READING = "the client is not reading";

export class SendBacklog {
  private timer?: ReturnType<typeof setTimeout>;
  private given = false;
  private stopped = false;
  /** Ends a waiting response's current poll at once. */
  private wake?: () => void;

  constructor(
    private readonly socket: WebSocket,
    /** Gives the client up (called once). */
    private readonly giveUp: (why: string) => void,
    private readonly graceMs = BACKLOG_GRACE_MS,
  ) {}

  /** After a send: gives up past the hard bound, or starts the grace over the soft one. */
  sent(): void {
    const waiting = this.socket.bufferedAmount;
    if (waiting > MAX_BACKLOG_BYTES) return this.stuck();
    if (waiting > BACKLOG_BYTES && this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        if (this.socket.bufferedAmount > BACKLOG_BYTES) this.stuck();
      }, this.graceMs);
    }
  }

  /**
   * Resolves true once the backlog is under BACKLOG_BYTES, false if the client was given up
   * (or the socket closed) first.
   */
  async drained(): Promise<boolean> {
    const since = Date.now();
    while (this.socket.bufferedAmount > BACKLOG_BYTES) {
      if (this.stopped || this.socket.readyState !== WebSocket.OPEN) return false;
      if (Date.now() - since > this.graceMs) {
        this.stuck();
        return false;
      }
      await new Promise<void>((resolve) => {
        const poll = setTimeout(resolve, POLL_MS);
        this.wake = () => {
          clearTimeout(poll);
          resolve();
        };
      });
      this.wake = undefined;
    }
    return !this.stopped && this.socket.readyState === WebSocket.OPEN;
  }

  /** The socket closed (or was given up): timers end, and a waiting response stops waiting. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.wake?.();
  }

  private stuck() {
    this.stop();
    if (this.given) return;
    this.given = true;
    this.giveUp(`${NOT_READING}: over ${this.socket.bufferedAmount} bytes unsent`);
  }
}
