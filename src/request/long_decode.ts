/**
 * Long decode for converted clients. A provider that stops an answer at its per-request output
 * cap says so on the hop's `finish` (its `continuation` token); the same request sent again
 * with the token goes on where it stopped. Here the hops become one answer: the later hops'
 * `start` is dropped, their part indices follow the earlier ones', a text or thinking part the
 * hop boundary cut goes on as one part, and usage is the sum of every hop's (each re-reads the
 * prompt and is billed). A stream goes on as the same message; a whole answer is the events
 * folded (`whole`).
 *
 * It stops on any other finish, on the client's own output budget (a total across hops, as the
 * provider counts it), after the route's `max_hops` (that hop's `length` finish stands) and when
 * the client left (no hop is opened after that). A hop after the first that fails (its call, or
 * an error in its stream) is a final 502: a stream ends with the client's interruption, a whole
 * answer is an error; no other target may redo what was already sent and billed.
 */
import type { IrSource } from "../kit/codec.ts";
import { GatewayError } from "../kit/errors.ts";
import { foldEvent } from "../kit/ir.ts";
import type * as ir from "../kit/ir.ts";
import { ProviderFailure } from "./failover.ts";
import { ClientGone } from "./stream_end.ts";

export interface Hops {
  /** The next hop's events: the same request sent again with `token`. */
  open(token: string): Promise<IrSource>;
  /** Requests in all for one answer, the first included. */
  max: number;
  /** The client's output budget across hops, if it set one. */
  budget?: number;
  /** The usage of the hops done so far, summed, at each boundary (limits and spend see it). */
  spent(usage: ir.Usage): void;
}

/** The events of an answer that may go on over several hops, `first` the first hop's. */
export function continued(first: IrSource, hops: Hops): IrSource {
  return new Joined(first, hops);
}

/** Reads a source to its end as one whole response; an error event or a cut end throws. */
export async function whole(source: IrSource): Promise<ir.Response> {
  const res: ir.Response = { id: "", model: "", created: 0, parts: [], finish: "stop" };
  let ended = false;
  try {
    for (let batch; (batch = await source.next()) !== undefined;) {
      for (const e of batch) {
        if (e.type === "error") {
          throw new ProviderFailure(new GatewayError(e.status, e.kind, e.message));
        }
        foldEvent(res, e);
        if (e.type === "finish") ended = true;
      }
    }
  } catch (e) {
    await source.cancel(e);
    throw e;
  }
  if (!ended) {
    throw new GatewayError(502, "upstream", "the upstream closed the stream before its end");
  }
  return { ...res, parts: res.parts.filter(Boolean) };
}

const kindOf = (p: Extract<ir.StreamEvent, { type: "part_start" }>["part"]) =>
  p.type === "text" || p.type === "thinking" ? p.type : undefined;

/** `e` at the answer's `index`: itself where the indices agree, as in every first hop. */
const moved = <E extends { index: number }>(e: E, index: number): E =>
  index === e.index ? e : { ...e, index };

class Joined implements IrSource {
  private hop = 1;
  /** The summed usage of the hops before this one, and this hop's latest. */
  private before?: ir.Usage;
  private usage?: ir.Usage;
  /** This hop's part indices → the answer's. */
  private indices = new Map<number, number>();
  private nextIndex = 0;
  /** The answer's text and thinking parts, by index: the kinds a hop boundary may cut. */
  private readonly cuttable = new Map<number, "text" | "thinking">();
  /** A text or thinking part whose stop waits: the next event tells whether a hop cut it. */
  private held?: number;
  /** The token the next read continues with. */
  private token?: string;
  /** A later hop's error event: thrown once the events before it went out. */
  private failure?: GatewayError;
  private gone = false;

  constructor(private source: IrSource, private readonly hops: Hops) {}

  async next(): Promise<ir.StreamEvent[] | undefined> {
    if (this.failure) {
      await this.drain();
      throw this.failure;
    }
    try {
      if (this.token !== undefined) await this.continue(this.token);
      const batch = await this.source.next();
      if (!batch) return undefined;
      const out: ir.StreamEvent[] = [];
      for (const e of batch) this.see(e, out);
      return out;
    } catch (e) {
      throw this.hop === 1 || e instanceof ClientGone ? e : this.failed(e);
    }
  }

  cancel(reason: unknown): Promise<void> {
    this.gone = true;
    return this.source.cancel(reason);
  }

  /**
   * Reads the hop that ended (with its last event, or an error) to its call's close: what else
   * comes is nothing to anyone, and a reset after the end lost nothing.
   */
  private async drain() {
    try {
      while ((await this.source.next()) !== undefined);
    } catch {
      // read to its end all the same
    }
  }

  /** Opens the next hop, unless the client left (before it opens, or while it does). */
  private async continue(token: string) {
    this.token = undefined;
    await this.drain();
    if (this.gone) throw new ClientGone();
    this.hop++;
    const source = await this.hops.open(token);
    if (this.gone) {
      await source.cancel(new ClientGone());
      throw new ClientGone();
    }
    this.source = source;
    this.indices = new Map();
  }

  /** A later hop's failure: the answer cannot be whole, and no other target may redo it. */
  private failed(e: unknown): GatewayError {
    const why = e instanceof GatewayError ? e.message : String(e);
    const err = new GatewayError(502, "upstream", `long decode hop ${this.hop} failed: ${why}`);
    const failure = new ProviderFailure(err);
    failure.retry = false;
    return failure;
  }

  /** This hop's index as the answer's (an event of a part never started keeps its own). */
  private at(index: number): number {
    return this.indices.get(index) ?? index;
  }

  private release(out: ir.StreamEvent[]) {
    if (this.held === undefined) return;
    out.push({ type: "part_stop", index: this.held });
    this.held = undefined;
  }

  private see(e: ir.StreamEvent, out: ir.StreamEvent[]) {
    switch (e.type) {
      case "start":
        this.usage = e.usage;
        if (this.hop === 1) out.push(e);
        return;
      case "usage":
        this.usage = e.usage;
        return void out.push(
          this.before ? { type: "usage", usage: plus(this.before, e.usage)! } : e,
        );
      case "part_start": {
        const kind = kindOf(e.part);
        // The part the hop boundary cut goes on: the hop's first part, of the same kind.
        if (
          this.held !== undefined && this.indices.size === 0 &&
          this.cuttable.get(this.held) === kind
        ) {
          this.indices.set(e.index, this.held);
          this.held = undefined;
          return;
        }
        this.release(out);
        const index = this.nextIndex++;
        this.indices.set(e.index, index);
        if (kind) this.cuttable.set(index, kind);
        return void out.push(moved(e, index));
      }
      case "part_stop": {
        this.release(out);
        const index = this.at(e.index);
        if (this.cuttable.has(index)) this.held = index;
        else out.push(moved(e, index));
        return;
      }
      case "finish":
        return this.finish(e, out);
      case "error":
        if (this.hop > 1) {
          this.failure = this.failed(new GatewayError(e.status, e.kind, e.message));
          return;
        }
        this.release(out);
        return void out.push(e);
      default:
        this.release(out);
        return void out.push(moved(e, this.at(e.index)));
    }
  }

  private finish(e: Extract<ir.StreamEvent, { type: "finish" }>, out: ir.StreamEvent[]) {
    const usage = plus(this.before, e.usage ?? this.usage);
    const { continuation, ...end } = e;
    const spent = (usage?.outputTokens ?? 0) >= (this.hops.budget ?? Infinity);
    if (continuation !== undefined && this.hop < this.hops.max && !spent) {
      this.before = usage;
      this.usage = undefined;
      this.token = continuation;
      if (usage) {
        this.hops.spent(usage);
        out.push({ type: "usage", usage });
      }
      return;
    }
    this.release(out);
    out.push(usage ? { ...end, usage } : end);
  }
}

/** Two hops' usage added, every count (a count neither reports stays absent). */
export function plus(a: ir.Usage | undefined, b: ir.Usage | undefined): ir.Usage | undefined {
  if (!a || !b) return a ?? b;
  const sum: ir.Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
  };
  for (const k of ["cacheReadTokens", "cacheWriteTokens", "reasoningTokens"] as const) {
    if (a[k] !== undefined || b[k] !== undefined) sum[k] = (a[k] ?? 0) + (b[k] ?? 0);
  }
  return sum;
}
