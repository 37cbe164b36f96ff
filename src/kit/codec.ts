/**
 * A format's codec, in both directions: as the client's format (ingress) and as a provider's
 * API (upstream). It is the conversion half of a format plugin (src/kit/format.ts); the core
 * converts only through it.
 */
import type * as ir from "./ir.ts";
import type { SseEvent } from "./sse.ts";
import type { LongDecode } from "./long_decode.ts";
import type { ReadUsage } from "./usage.ts";

/** What an upstream encoder needs to know about the route it is encoding for. */
export interface EncodeContext {
  /** The model name to send upstream (after the route's rename). */
  model: string;
  /** Names the route in error messages, e.g. `"claude-*" → anthropic (messages)`. */
  route: string;
  /** `max_tokens` for targets that require one when the client sent none. */
  defaultMaxTokens: number;
  /**
   * Sampling hints that only tune randomness (`top_k`, `seed`) are dropped, not rejected, when
   * the target lacks them (Gemini CLI sends `topK` on every call); their client-side names are
   * collected here and reported in the `x-gateway-dropped-params` response header.
   */
  dropped?: string[];
  /** The route's `hosted_tools` policy (default `map`). */
  hostedTools?: "map" | "drop" | "reject";
}

/** Deterministic inputs for decoders (tests pin them). */
export interface DecodeContext {
  /** Unix seconds, for formats whose responses carry no timestamp. */
  now: number;
  /** Fallback id for formats whose responses carry none. */
  id: string;
  /**
   * Names of the request's `custom` (free-text) tools. Formats without custom tools send them
   * as a function taking `{"input": string}`; their decoders unwrap calls to these names back
   * into `kind: "custom"` tool calls with the raw text as arguments.
   */
  customTools?: readonly string[];
}

/** What a client-facing encoder needs. */
export interface ClientContext {
  /** The model name the client asked for (responses echo it, not the upstream's name). */
  model: string;
  /** Chat clients get a usage chunk only when they asked (`stream_options.include_usage`). */
  streamUsage?: boolean;
  /** The request's `compaction` flag: answer with one Responses `compaction` item. */
  compaction?: boolean;
  /** The request's tools (e.g. for the Responses `namespace` that tool calls must echo). */
  tools?: readonly ir.Tool[];
  /** Request settings the format's answer object repeats (its plugin picks them). */
  echo?: Record<string, unknown>;
  /** Unix seconds for `completed_at` (tests pin it); default: the clock. */
  now?: () => number;
  /** The id to answer with (one the gateway made) instead of one derived from the upstream's. */
  id?: string;
  /**
   * Called with the finished answer object before the client gets its end (the
   * stored-conversation hook, src/request/conversations.ts); a stream's terminal event waits for the
   * returned promise.
   */
  onAnswer?: (answer: Record<string, unknown>) => Promise<void> | void;
}

/**
 * What a relayed stream of a format is watched for. Events are looked at with cheap string
 * tests; the few that carry usage are kept as text, and parsed once when the stream ends for the
 * codec's `usage` to read.
 */
export interface StreamWatch {
  /** Looks at one upstream event; true if it ends the stream (its terminal event, an error). */
  inspect(e: SseEvent): boolean;
  /**
   * The data of the events kept for their usage so far, in order (only those the reading needs;
   * on a cut, what the stream had said by then).
   */
  usageEvents(): readonly string[];
  /**
   * Characters of generated output (text, reasoning, tool-call arguments) in the events looked
   * at so far: a cut stream's output is estimated from them where the provider gave no count.
   */
  output(): number;
}

/** Where a stream step puts what it makes. */
export interface Emit<T> {
  enqueue(item: T): void;
}

/** IR events, a batch at a time; undefined at the end. */
export interface IrSource {
  next(): Promise<ir.StreamEvent[] | undefined>;
  cancel(reason: unknown): Promise<void>;
}

/**
 * One step of a stream, run by the core as a plain call (several steps fused into one stream
 * stage); `new TransformStream(step)` makes it a stream of its own where one is wanted. A step
 * may return a promise to hold the stream until it is done (an encoder keeps a stored answer
 * before its terminal event goes out).
 */
export interface StreamStep<I, O> {
  transform(item: I, out: Emit<O>): void | Promise<void>;
}

export interface Codec {
  readonly api: ir.Api;

  // ---- ingress: the client speaks this format ----
  /** A validated client body to IR. `model` is the requested model (Gemini: from the path). */
  decodeRequest(body: Record<string, unknown>, model: string): ir.Request;
  encodeResponse(res: ir.Response, ctx: ClientContext): unknown;
  /** IR stream events to this format's SSE events (terminal events only on `finish`). */
  encodeStream(ctx: ClientContext): StreamStep<ir.StreamEvent, SseEvent>;

  // ---- upstream: the provider speaks this format ----
  /** Path appended to the provider's base_url (query included). */
  path(model: string, stream: boolean): string;
  /** IR to this format's request body; throws a 400 for what the target cannot express. */
  encodeRequest(req: ir.Request, ctx: EncodeContext): Record<string, unknown>;
  decodeResponse(body: Record<string, unknown>, ctx: DecodeContext): ir.Response;
  /**
   * The usage of a relayed answer, read without decoding the rest: a whole JSON body, a stream's
   * kept events, a socket response's terminal frame (src/kit/usage.ts).
   */
  usage: ReadUsage;
  /**
   * The most output tokens a request body of this format allows (its `max_tokens`), read
   * without decoding it: what a token-limited identity reserves for the answer (absent: a
   * default, docs/limits.md).
   */
  outputCap?(body: Record<string, unknown>): number | undefined;
  /**
   * This format's SSE events to IR stream events. Emits `finish` only on the real end; throws
   * `malformedEvent()` (kit/errors.ts) for an event it cannot read, which ends the client's stream
   * with its interruption ending.
   */
  decodeStream(ctx: DecodeContext): StreamStep<SseEvent, ir.StreamEvent>;
  /** A watch for one relayed stream of this format. */
  watch(): StreamWatch;
  /** Long decode, for a format whose providers continue an answer across requests. */
  readonly longDecode?: LongDecode;
}
