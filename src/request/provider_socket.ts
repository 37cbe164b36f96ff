/**
 * The provider-side WebSocket of a relaying client socket: opened on the session's first relayed
 * frame, failing over among the route's targets of the wire's format (each dial within its
 * `connect_ms`), then each frame relayed untouched both ways, every response in flight under
 * the first-byte and idle deadlines of an HTTP stream.
 */
import type { Codec, StreamWatch } from "../kit/codec.ts";
import type { ProviderSocketWire, ResponseEnd } from "../kit/socket.ts";
import type { RequestContext } from "./context.ts";
import { Deadline } from "./deadline.ts";
import { failover } from "./failover.ts";
import { pickHeaders } from "./headers.ts";
import { Session } from "./session.ts";
import { openUpstreamSocket } from "./relay.ts";
import type { Resolved } from "./router.ts";
import type { Trace } from "../ops/trace.ts";
import { usageOf, watchedUsage } from "./usage.ts";

/** The client side, as the provider socket tells it what happened. */
interface SocketClient {
  /** A provider frame to pass on (scrubbed of provider keys by the client side). */
  relayFrame(text: string): void;
  /** The response of `trace` was cut short: the client gets the interruption frame. */
  interrupted(trace: Trace, why: string): void;
  close(code?: number, reason?: string): void;
}

/**
 * Opens the provider socket for `r`'s first eligible target that opens one; `signal` is the
 * client socket's (its closing abandons the dial). Resolves with the target chosen.
 */
export async function openProviderSocket(
  ctx: RequestContext,
  r: Resolved,
  wire: ProviderSocketWire,
  client: SocketClient,
  signal: AbortSignal,
): Promise<{ socket: ProviderSocket; target: Resolved }> {
  const { formats } = ctx.gw;
  return await failover(ctx, r, {
    // A platform addresses HTTP calls only.
    eligible: (t) => t.provider.api === wire.api && t.provider.platform === undefined,
    bound: wire.bound,
    // The socket's session is its upgrade's (Codex names it in a header).
    session: () => new Session(ctx, () => undefined, false).signal(),
    run: async (t, key) => {
      ctx.trace.attempt();
      const ws = await openUpstreamSocket({
        provider: t.provider,
        spec: formats.upstream(t.provider.api)!,
        key: key?.value,
        path: wire.path,
        forward: pickHeaders(ctx.headerPairs, formats.forwardHeaders(t.provider.api)),
        signal,
        stopping: ctx.gw.stopping,
      });
      const codec = formats.codec(wire.api);
      const socket = new ProviderSocket(
        t.provider.name,
        ws,
        t.provider.timeouts,
        wire,
        codec,
        client,
      );
      return { socket, target: t };
    },
  });
}

/** A response sent on the provider socket: its trace, and what its frames said so far. */
interface Pending {
  trace: Trace;
  watch: StreamWatch;
}

export class ProviderSocket {
  /** Responses sent and not yet ended, oldest first (a socket runs them in order). */
  private readonly pending: Pending[] = [];

  /** First-byte, then idle deadline of the response in flight (as for an HTTP stream). */
  private readonly deadline = new Deadline((err) => {
    this.interrupt(err.message);
    this.close();
  });

  constructor(
    readonly provider: string,
    private readonly ws: WebSocket,
    private readonly timeouts: { first_byte_ms: number; idle_ms: number },
    wire: ProviderSocketWire,
    /**
     * The codec of the wire's format, whose stream events these frames are: its watch follows
     * a response (a cut counts by it), its `usage` reads the terminal frame's.
     */
    private readonly codec: Codec,
    private readonly client: SocketClient,
  ) {
    ws.onmessage = (e) => {
      const text = typeof e.data === "string" ? e.data : "";
      const current = this.pending[0];
      current?.trace.firstByte();
      current?.watch.inspect({ data: text });
      const end = wire.ends(text);
      if (end) this.end(end);
      this.arm(timeouts.idle_ms, "went idle");
      client.relayFrame(text);
    };
    ws.onclose = () => this.interrupt("the upstream WebSocket closed before the response ended");
  }

  /** Logs the oldest response with what its terminal frame says (status, usage). */
  private end({ status, usage }: ResponseEnd) {
    const done = this.pending.shift()?.trace;
    if (!done) return;
    if (status !== undefined) done.status = status;
    else if (usage) done.reportUsage(usageOf(this.codec.usage, usage));
    done.end(done.status ?? 200);
  }

  /** (Re)starts the deadline while a response is in flight. */
  private arm(ms: number, what: string) {
    if (this.pending.length === 0) return this.deadline.clear();
    this.deadline.arm(ms, what);
  }

  /** Ends the client socket, telling it first if a response was cut short. */
  interrupt(why: string, code?: number) {
    this.deadline.clear();
    const [current, ...queued] = this.pending.splice(0);
    if (current) {
      // What its frames said by then: the usage so far, the output relayed.
      current.trace.reportUsage(watchedUsage(this.codec.usage, current.watch));
      current.trace.outputChars = current.watch.output();
      this.client.interrupted(current.trace, why);
    }
    for (const p of [current, ...queued]) p?.trace.end(502);
    this.client.close(code, code ? why : undefined);
  }

  send(text: string, trace: Trace) {
    this.pending.push({ trace, watch: this.codec.watch() });
    this.arm(this.timeouts.first_byte_ms, "sent no data");
    this.ws.send(text);
  }

  close() {
    this.deadline.clear();
    if (this.ws.readyState <= WebSocket.OPEN) this.ws.close();
  }
}
