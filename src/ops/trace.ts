/**
 * One request's life as a fixed set of events — routed, upstream attempt, first byte, usage,
 * ended — told to every observer from one place. The access log is one observer; metrics and
 * failover plug in beside it. A WebSocket response frame gets its own trace (`forResponse`).
 */
import type { EndpointSpec } from "../kit/format.ts";
import type { ErrorKind } from "../kit/errors.ts";
import type { Usage } from "../kit/ir.ts";
import type { ProviderConfig } from "../config/config.ts";
import { tokensFor } from "./estimate.ts";

/** How a request reached its answer: bytes relayed, converted through the IR, or answered here. */
type Mode = "relay" | "convert" | "local";

export interface Observer {
  routed?(t: Trace): void;
  /** An upstream call is about to be made (`t.attempts` counts them). */
  attempt?(t: Trace): void;
  /**
   * An attempt failed and the request moves on to another (the last attempt's outcome is the
   * trace's own, at `ended`).
   */
  attemptFailed?(t: Trace, status: number, kind: ErrorKind): void;
  /** The first byte of the answer went to the client. */
  firstByte?(t: Trace): void;
  /** The provider reported usage (`t.usage`); may come more than once, the last one counts. */
  usage?(t: Trace): void;
  /** The answer is complete (or abandoned): every field is final. Called exactly once. */
  ended(t: Trace): void;
}

interface TraceStart {
  requestId: string;
  method: string;
  path: string;
  /** The id of the client's error dialect (a metric label). */
  dialect: string;
  clientIp?: string;
}

export class Trace {
  readonly started = performance.now();
  readonly requestId: string;
  readonly method: string;
  readonly path: string;
  /** The id of the client's error dialect: its path's, then its endpoint's (a metric label). */
  dialect: string;
  readonly clientIp?: string;
  endpoint = "unknown";
  /** `gen_ai.operation.name` when the endpoint is a GenAI call. */
  operation?: string;
  /** Whether the endpoint's tokens are billed (not compaction nor token counting). */
  private billedEndpoint = true;
  /** The identity's name: a client key's configured name (never the key) or a Kong consumer. */
  key?: string;
  /** The identity was authenticated by Kong (a consumer), not by a gateway key. */
  consumer = false;
  /** An agent session and agent the client named (`X-Claude-Code-Session-Id`, …). */
  sessionId?: string;
  agentId?: string;
  /** The model the client asked for. */
  model?: string;
  /** The model name sent upstream (after a route's rename): what the provider bills. */
  upstreamModel?: string;
  /** Describes the route in the access log (`"claude-*" → anthropic (messages)`). */
  route?: string;
  /** The route's `name` (default: its first model pattern), a metric label. */
  routeName?: string;
  /** The provider's configured name. */
  provider?: string;
  /** The pool key sent to the provider, by name (`<provider>#<index>`), never by value. */
  providerKey?: string;
  /** The provider's API (the format plugin that speaks to it). */
  api?: string;
  /** The provider's platform, if it names one. */
  platform?: string;
  /**
   * A converted Responses request ending with Codex's `compaction_trigger`: not billed, but its
   * tokens count toward token limits.
   */
  compaction = false;
  mode?: Mode;
  attempts = 0;
  /**
   * Long decode: the continuation requests an answer took after its first
   * (src/request/long_decode.ts).
   */
  hops = 0;
  usage?: Usage;
  status?: number;
  errorKind?: ErrorKind;
  /** Scrubbed of provider keys before any observer sees it. */
  error?: string;
  interrupted = false;
  /** The client went away before the answer was complete. */
  clientGone = false;
  /** Characters of the request body sent upstream (a cut answer's input estimate). */
  sentChars = 0;
  /**
   * Characters of generated output (text, reasoning, tool-call arguments) the client was sent:
   * a cut answer's output is estimated from them where the provider gave no count.
   */
  outputChars = 0;
  /** The usage holds estimates: the answer was cut before the provider counted all of it. */
  estimated = false;
  ttfbMs?: number;
  durationMs?: number;
  /** A streamed answer ends when its body does: the stream stage calls `end`, not the server. */
  streaming = false;
  /** Conversation store outcome: `kept`, `too_large`, `taken`, `off` (store: false), `failed`. */
  stored?: string;
  /** Request fields the target could not express, dropped and reported. */
  dropped?: string[];
  /** The WebSocket itself (its responses have their own traces): ends when the socket closes. */
  upgrade = false;
  /**
   * Set by an observer whose bookkeeping of this request (a limited identity's usage) must land
   * before the client sees the answer end: a stream closes only once it settles.
   */
  counted?: Promise<void>;
  private ended = false;

  constructor(private readonly observers: readonly Observer[], start: TraceStart) {
    this.requestId = start.requestId;
    this.method = start.method;
    this.path = start.path;
    this.dialect = start.dialect;
    this.clientIp = start.clientIp;
  }

  /** The endpoint the request matched, and the dialect it speaks. */
  matched(
    e: Pick<EndpointSpec<unknown>, "name" | "operation" | "unbilled">,
    dialect: string,
  ): void {
    this.endpoint = e.name;
    this.dialect = dialect;
    this.operation = e.operation;
    this.billedEndpoint = !e.unbilled;
  }

  /** A fresh trace for one response on a WebSocket: same request, key and endpoint. */
  forResponse(): Trace {
    const t = new Trace(this.observers, this);
    t.endpoint = this.endpoint;
    t.operation = this.operation;
    t.billedEndpoint = this.billedEndpoint;
    t.key = this.key;
    t.consumer = this.consumer;
    t.sessionId = this.sessionId;
    t.agentId = this.agentId;
    // Sent as frames, ended by the socket: a stream (time to first chunk, active streams).
    t.streaming = true;
    return t;
  }

  /** The route a model resolved to (known before the mode is): a `Resolved` of src/request/router.ts. */
  target(
    model: string,
    r: { upstreamModel: string; label: string; name: string; provider: ProviderConfig },
  ): void {
    this.model = model;
    this.upstreamModel = r.upstreamModel;
    this.route = r.label;
    this.routeName = r.name;
    this.provider = r.provider.name;
    this.api = r.provider.api;
    this.platform = r.provider.platform;
  }

  /**
   * Whether the tokens are billed: not for compaction (its endpoint, or Codex's in-band
   * compaction on a converted route) nor token counting, per the product spec.
   */
  get billable(): boolean {
    return this.billedEndpoint && !this.compaction;
  }

  /**
   * Whether the tokens count toward the identity's token limits: a generation's, compaction's
   * too (unbilled, it still runs the model on the client's input); not token counting's, which
   * generates nothing.
   */
  get countsTokens(): boolean {
    return this.operation !== "count_tokens";
  }

  routed(mode: Mode): void {
    this.mode = mode;
    for (const o of this.observers) o.routed?.(this);
  }

  attempt(): void {
    this.attempts++;
    for (const o of this.observers) o.attempt?.(this);
  }

  attemptFailed(status: number, kind: ErrorKind): void {
    for (const o of this.observers) o.attemptFailed?.(this, status, kind);
  }

  firstByte(): void {
    if (this.ttfbMs !== undefined) return;
    this.ttfbMs = Math.round(performance.now() - this.started);
    for (const o of this.observers) o.firstByte?.(this);
  }

  reportUsage(usage: Usage | undefined): void {
    if (!usage) return;
    this.usage = usage;
    for (const o of this.observers) o.usage?.(this);
  }

  failed(kind: ErrorKind, message: string): void {
    this.errorKind = kind;
    this.error = message;
  }

  /**
   * A streamed answer that the client left or the upstream cut, once the provider took the
   * request: it has used tokens, counted or not.
   */
  private get cutShort(): boolean {
    return this.streaming && !this.upgrade && this.attempts > 0 &&
      (this.interrupted || this.clientGone);
  }

  /**
   * A cut answer's usage: what the provider had reported by then; the input estimated from the
   * request sent where it reported none, and the output from what the client was sent where
   * that is more (docs/limits.md). Told to the observers like any usage.
   */
  private completeUsage(): void {
    const u = this.usage;
    const inputTokens = u?.inputTokens || tokensFor(this.sentChars);
    const outputTokens = Math.max(u?.outputTokens ?? 0, tokensFor(this.outputChars));
    if (u ? u.inputTokens === inputTokens && u.outputTokens === outputTokens : !inputTokens) {
      return;
    }
    this.estimated = true;
    this.reportUsage({ ...u, inputTokens, outputTokens });
  }

  /** The stream was cut short: the client got the interruption ending. */
  interruptedBy(why: string): void {
    this.interrupted = true;
    this.failed("upstream_interrupted", why);
  }

  end(status?: number): void {
    if (this.ended) return;
    this.ended = true;
    if (status !== undefined) this.status = status;
    if (this.cutShort) this.completeUsage();
    this.durationMs = Math.round(performance.now() - this.started);
    for (const o of this.observers) o.ended(this);
  }
}
