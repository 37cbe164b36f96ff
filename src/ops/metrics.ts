/**
 * Metrics in the Prometheus text format (0.0.4): the OpenTelemetry GenAI client metrics under
 * their Prometheus names, and the gateway's own counters and gauges. One observer of the
 * request traces feeds them; `GET /metrics` on a listener of its own exposes them.
 */
import type { MetricsConfig } from "../config/config.ts";
import { DEMO_API } from "../config/config.ts";
import type { ErrorKind } from "../kit/errors.ts";
import { clip } from "../kit/model_name.ts";
import type { Observer, Trace } from "./trace.ts";

type Kind = "counter" | "gauge" | "histogram";

/** Label values of one series, in the family's label order. */
type Values = readonly string[];

/** Label values equal one by one (mostly the very same strings: a pointer compare each). */
function sameValues(a: Values, b: Values): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One series of a family, as a snapshot carries it. */
export interface Series {
  values: Values;
  state: unknown;
}

/** A family's series by label values: a map per label, the last one holding the states. */
type SeriesTree<S> = Map<string, SeriesTree<S> | S>;

/** One metric family: its series keyed by their label values. */
abstract class Family<S> {
  /** In creation order, for `expose`. */
  protected readonly series: { values: Values; state: S }[] = [];
  /**
   * A map per label rather than one keyed by the joined values: the values are mostly the
   * config's own strings, hashed once, where a joined key is a new string to hash every time.
   */
  private readonly tree: SeriesTree<S> = new Map();
  /** The previous call's series: traffic mostly repeats its labels, request after request. */
  private lastValues: Values = [];
  private lastState?: S;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly kind: Kind,
    readonly labels: readonly string[],
  ) {}

  /** A new series' state. */
  protected abstract fresh(): S;

  protected state(values: Values): S {
    if (this.lastState && sameValues(this.lastValues, values)) return this.lastState;
    let level = this.tree;
    const end = values.length - 1;
    for (let i = 0; i < end; i++) {
      let next = level.get(values[i]) as SeriesTree<S> | undefined;
      if (!next) level.set(values[i], next = new Map());
      level = next;
    }
    const leaf = values[end] ?? "";
    let state = level.get(leaf) as S | undefined;
    if (!state) {
      level.set(leaf, state = this.fresh());
      this.series.push({ values, state });
    }
    this.lastValues = values;
    this.lastState = state;
    return state;
  }

  protected abstract samples(values: Values, state: S): string[];

  /** Adds `from`, another process's or thread's state of one series, to `into`. */
  protected abstract addState(into: S, from: S): void;

  /** Every series as plain data (posted between gateway threads: `workers`). */
  snapshot(): Series[] {
    return this.series as Series[];
  }

  /** Adds another thread's series to this family's: counts and sums add up. */
  absorb(series: readonly Series[]): void {
    for (const { values, state } of series) this.addState(this.state(values), state as S);
  }

  expose(): string {
    const lines = [
      `# HELP ${this.name} ${escapeHelp(this.help)}`,
      `# TYPE ${this.name} ${this.kind}`,
    ];
    for (const { values, state } of this.series) {
      lines.push(...this.samples(values, state));
    }
    return lines.join("\n") + "\n";
  }

  /** `{a="x",b="y"}` with empty values left out (Prometheus reads them as absent). */
  protected labelSet(values: Values, extra: [string, string][] = []): string {
    const pairs = [...this.labels.map((l, i) => [l, values[i]] as [string, string]), ...extra]
      .filter(([, v]) => v !== "");
    if (pairs.length === 0) return "";
    return `{${pairs.map(([l, v]) => `${l}="${escapeLabel(v)}"`).join(",")}}`;
  }
}

export class Counter extends Family<{ n: number }> {
  constructor(name: string, help: string, labels: readonly string[]) {
    super(name, help, "counter", labels);
  }

  protected fresh() {
    return { n: 0 };
  }

  add(values: Values, n = 1): void {
    this.state(values).n += n;
  }

  protected addState(into: { n: number }, from: { n: number }): void {
    into.n += from.n;
  }

  protected samples(values: Values, s: { n: number }): string[] {
    return [`${this.name}${this.labelSet(values)} ${formatNumber(s.n)}`];
  }
}

export class Gauge extends Family<{ n: number }> {
  constructor(name: string, help: string) {
    super(name, help, "gauge", []);
    this.state([]);
  }

  protected fresh() {
    return { n: 0 };
  }

  add(n: number): void {
    this.state([]).n += n;
  }

  protected addState(into: { n: number }, from: { n: number }): void {
    into.n += from.n;
  }

  protected samples(values: Values, s: { n: number }): string[] {
    return [`${this.name}${this.labelSet(values)} ${formatNumber(s.n)}`];
  }
}

interface Buckets {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Family<Buckets> {
  constructor(
    name: string,
    help: string,
    labels: readonly string[],
    readonly bounds: readonly number[],
  ) {
    super(name, help, "histogram", labels);
  }

  protected fresh(): Buckets {
    return { counts: this.bounds.map(() => 0), sum: 0, count: 0 };
  }

  observe(values: Values, v: number): void {
    const s = this.state(values);
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && !(v <= bounds[i])) i++; // NaN falls in no bucket
    if (i < bounds.length) s.counts[i]++;
    s.sum += v;
    s.count++;
  }

  protected addState(into: Buckets, from: Buckets): void {
    from.counts.forEach((n, i) => into.counts[i] += n);
    into.sum += from.sum;
    into.count += from.count;
  }

  protected samples(values: Values, s: Buckets): string[] {
    let cumulative = 0;
    const lines = this.bounds.map((b, i) => {
      cumulative += s.counts[i];
      const le = this.labelSet(values, [["le", formatNumber(b)]]);
      return `${this.name}_bucket${le} ${cumulative}`;
    });
    lines.push(`${this.name}_bucket${this.labelSet(values, [["le", "+Inf"]])} ${s.count}`);
    lines.push(`${this.name}_sum${this.labelSet(values)} ${formatNumber(s.sum)}`);
    lines.push(`${this.name}_count${this.labelSet(values)} ${s.count}`);
    return lines;
  }
}

/** Label values escape `\`, `"` and newlines; HELP text only `\` and newlines. */
const escapeLabel = (v: string) =>
  v.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
const escapeHelp = (v: string) => v.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");

function formatNumber(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (!Number.isFinite(n)) return n > 0 ? "+Inf" : "-Inf";
  return String(n);
}

/** Keeps a label's distinct values bounded: past `max` of them, new ones read `other`. */
class BoundedValues {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  value(full: string): string {
    // Clipped as well: a label value is held for the process's life and sent on every scrape.
    const v = clip(full);
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.max) return "other";
    this.seen.add(v);
    return v;
  }
}

/** OpenTelemetry's recommended buckets for `gen_ai.client.token.usage`. */
const TOKEN_BUCKETS = [
  1,
  4,
  16,
  64,
  256,
  1024,
  4096,
  16384,
  65536,
  262144,
  1048576,
  4194304,
  16777216,
  67108864,
];
/** OpenTelemetry's recommended buckets for `gen_ai.client.operation.duration` (seconds). */
const SECONDS_BUCKETS = [
  0.01,
  0.02,
  0.04,
  0.08,
  0.16,
  0.32,
  0.64,
  1.28,
  2.56,
  5.12,
  10.24,
  20.48,
  40.96,
  81.92,
];

/** `gen_ai.provider.name` of each provider api or platform: its plugin's `system`; the demo is ours. */
export type GenAiSystems = Readonly<Record<string, string>>;
export const genAiProvider = (systems: GenAiSystems, api: string) =>
  systems[api] ?? (api === DEMO_API ? "gateway.demo" : api);

/** What happened to a trace's upstream call (`gateway_upstream_attempts_total`). */
function attemptOutcome(t: Trace): string {
  if (t.interrupted || t.clientGone) return "interrupted";
  return outcomeOf(t.status ?? 0, t.errorKind);
}

function outcomeOf(status: number, kind?: ErrorKind): string {
  if (kind === "timeout") return "timeout";
  if (status === 429 || kind === "rate_limit") return "rate_limited";
  if (status >= 500) return "server_error";
  if (status >= 400) return "client_error";
  return "ok";
}

const GEN_AI = ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model"];

export class Metrics implements Observer {
  readonly tokenUsage = new Histogram(
    "gen_ai_client_token_usage",
    "Tokens used per GenAI operation (input includes cached tokens, output reasoning tokens).",
    [...GEN_AI, "gen_ai_token_type"],
    TOKEN_BUCKETS,
  );
  readonly duration = new Histogram(
    "gen_ai_client_operation_duration_seconds",
    "GenAI operation duration, from the request's arrival to the end of its answer.",
    [...GEN_AI, "error_type"],
    SECONDS_BUCKETS,
  );
  readonly firstChunk = new Histogram(
    "gen_ai_client_operation_time_to_first_chunk_seconds",
    "Streamed GenAI operations: from the request's arrival to the first byte sent.",
    GEN_AI,
    SECONDS_BUCKETS,
  );
  readonly requests = new Counter(
    "gateway_requests_total",
    "Requests answered, by endpoint, route, provider, status and mode (relay, convert, local).",
    ["endpoint", "route", "provider", "status", "mode"],
  );
  readonly tokens = new Counter(
    "gateway_tokens_total",
    "Tokens by client key name, route, provider, upstream model, type (input, output) and billable.",
    ["key", "route", "provider", "model", "type", "billable"],
  );
  readonly tokenDetails = new Counter(
    "gateway_token_details_total",
    "Parts of gateway_tokens_total: cache_read and cache_write of input, reasoning of output.",
    ["key", "route", "provider", "model", "type"],
  );
  readonly attempts = new Counter(
    "gateway_upstream_attempts_total",
    "Upstream calls by provider and outcome.",
    ["provider", "outcome"],
  );
  readonly interruptions = new Counter(
    "gateway_stream_interruptions_total",
    "Answers cut short after they started (the client got the interruption ending).",
    ["provider", "dialect"],
  );
  readonly activeStreams = new Gauge(
    "gateway_active_streams",
    "Streamed answers (HTTP and WebSocket responses) sending now.",
  );
  readonly activeWebSockets = new Gauge("gateway_active_websockets", "Client WebSockets open now.");
  readonly identityRequests = new Counter(
    "gateway_identity_requests_total",
    "Requests answered, by identity (key: a client key's name or a Kong consumer).",
    ["key"],
  );
  readonly limitRejections = new Counter(
    "gateway_limit_rejections_total",
    "Requests refused by an identity's limit (key: the identity's name), by limit name.",
    ["key", "limit"],
  );
  readonly spend = new Counter(
    "gateway_spend_usd_total",
    "USD spent by identity, provider and upstream model, from the configured prices.",
    ["key", "provider", "model"],
  );
  readonly limitsStoreErrors = new Counter(
    "gateway_limits_store_errors_total",
    "Calls to the limits store that failed (the store unreachable or too slow).",
    ["store"],
  );
  private readonly models: BoundedValues;
  /** Identities: configured keys are few, but Kong consumer names come from outside. */
  private readonly keys: BoundedValues;
  /** Traces counted in a gauge, so `ended` takes back exactly what `firstByte` added. */
  private readonly active = new WeakMap<Trace, Gauge>();

  private readonly systems: GenAiSystems;

  constructor(opts: { maxLabelValues?: number; systems?: GenAiSystems } = {}) {
    this.systems = opts.systems ?? {};
    this.models = new BoundedValues(opts.maxLabelValues ?? 1000);
    this.keys = new BoundedValues(opts.maxLabelValues ?? 1000);
  }

  /** A model label value, bounded like every model label (past the bound: `other`). */
  modelLabel(model: string): string {
    return this.models.value(model);
  }

  /** A `key` label value (an identity's name), bounded the same way. */
  keyLabel(identity: string): string {
    return this.keys.value(identity);
  }

  firstByte(t: Trace): void {
    if (!t.streaming) return;
    const gauge = t.upgrade ? this.activeWebSockets : this.activeStreams;
    gauge.add(1);
    this.active.set(t, gauge);
  }

  attemptFailed(t: Trace, status: number, kind: ErrorKind): void {
    this.attempts.add([t.provider ?? "", outcomeOf(status, kind)]);
  }

  ended(t: Trace): void {
    this.active.get(t)?.add(-1);
    this.active.delete(t);
    const status = t.status ?? 0;
    const provider = t.provider ?? "";
    // Only names a provider accepted become series; made-up ones that fail upstream do not.
    const model = status >= 200 && status < 300 && t.model ? this.models.value(t.model) : "";
    this.requests.add([t.endpoint, t.routeName ?? "", provider, String(status), t.mode ?? ""]);
    const key = t.key ? this.keys.value(t.key) : "";
    if (key) this.identityRequests.add([key]);
    if (t.attempts > 0) this.attempts.add([provider, attemptOutcome(t)]);
    if (t.interrupted) this.interruptions.add([provider, t.dialect]);
    const operation = t.operation;
    if (!operation || !t.api || t.upgrade) return;
    const genAi = [operation, genAiProvider(this.systems, t.platform ?? t.api), model];
    const failed = status >= 400 || t.interrupted;
    const errorType = failed ? t.errorKind ?? String(status) : "";
    this.duration.observe([...genAi, errorType], (t.durationMs ?? 0) / 1000);
    if (t.streaming && t.ttfbMs !== undefined) this.firstChunk.observe(genAi, t.ttfbMs / 1000);
    const u = t.usage;
    if (!u) return;
    const route = t.routeName ?? "";
    const billable = String(t.billable);
    // The model the provider ran, as gateway_spend_usd_total labels it (a route may rename).
    const ran = model && t.upstreamModel && t.upstreamModel !== t.model
      ? this.models.value(t.upstreamModel)
      : model;
    // Counting tokens and embedding produce none.
    const counted = operation === "count_tokens" || operation === "embeddings"
      ? [["input", u.inputTokens]] as const
      : [["input", u.inputTokens], ["output", u.outputTokens]] as const;
    for (const [type, n] of counted) {
      this.tokenUsage.observe([...genAi, type], n);
      this.tokens.add([key, route, provider, ran, type, billable], n);
    }
    const details = [
      ["cache_read", u.cacheReadTokens],
      ["cache_write", u.cacheWriteTokens],
      ["reasoning", u.reasoningTokens],
    ] as const;
    for (const [type, n] of details) {
      if (n) this.tokenDetails.add([key, route, provider, ran, type], n);
    }
  }

  /** Every family in the Prometheus text format. */
  expose(): string {
    return this.families().map((f) => f.expose()).join("");
  }

  /** Every family's series, by family name: what a gateway thread reports (`workers`). */
  snapshot(): MetricsSnapshot {
    return Object.fromEntries(this.families().map((f) => [f.name, f.snapshot()]));
  }

  /**
   * Adds a thread's snapshot: the sum over threads is what one `GET /metrics` shows. Without
   * `gauges`, only what counts up (a dead thread's: what it had open ended with it).
   */
  absorb(snapshot: MetricsSnapshot, { gauges = true } = {}): void {
    for (const f of this.families()) {
      if (gauges || f.kind !== "gauge") f.absorb(snapshot[f.name] ?? []);
    }
  }

  private families(): Family<unknown>[] {
    return [
      this.tokenUsage,
      this.duration,
      this.firstChunk,
      this.requests,
      this.tokens,
      this.tokenDetails,
      this.attempts,
      this.interruptions,
      this.activeStreams,
      this.activeWebSockets,
      this.identityRequests,
      this.limitRejections,
      this.spend,
      this.limitsStoreErrors,
    ] as Family<unknown>[];
  }
}

/** A Metrics' series by family name, as plain data. */
export type MetricsSnapshot = Record<string, readonly Series[]>;

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * Serves `GET /metrics` on its own listener (Kong routes only the gateway's port): `metrics`, a
 * gateway's, or the sum over the threads of `workers` (src/workers.ts).
 */
export function serveMetrics(
  metrics: { expose(): string | Promise<string> },
  config: MetricsConfig,
  onListen: (addr: Deno.NetAddr) => void,
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: config.hostname, port: config.port, onListen }, async (req) => {
    const { pathname } = new URL(req.url);
    if (pathname !== "/metrics") return new Response("not found\n", { status: 404 });
    if (req.method !== "GET" && req.method !== "HEAD") {
      return new Response("method not allowed\n", { status: 405, headers: { allow: "GET" } });
    }
    const text = await metrics.expose();
    return new Response(text, { headers: { "content-type": METRICS_CONTENT_TYPE } });
  });
}
