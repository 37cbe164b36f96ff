/**
 * `workers: N`: N gateway threads serving one port (each its own `Deno.serve` with `reusePort`,
 * the kernel spreading connections), run by this supervisor on the process's main thread so
 * that they behave as one gateway: one config (validated here once, then handed to every
 * thread), one reload, one `/metrics` (the sum over the threads), one shutdown, limits and kept
 * answers exact across threads (in Redis, or in the supervisor's memory: src/shared_stores.ts),
 * and a thread that dies or hangs replaced within seconds, logged. docs/scaling.md.
 */
import { type Config, providerKeys } from "./config/config.ts";
import { Metrics, type MetricsSnapshot } from "./ops/metrics.ts";
import { decideReload, reportReload } from "./reload.ts";
import { Secrets } from "./ops/secrets.ts";
import { SharedStores } from "./state/shared_stores.ts";
import { Pins } from "./request/pins.ts";
import type { FromWorker, ToWorker } from "./worker_messages.ts";

/**
 * A thread that has answered none of this many pings in a row (one a second) is taken for hung,
 * and replaced. Counted in pings, not time: a supervisor thread that was itself kept off the CPU
 * reads its queued answers before its next ping, where a clock would blame the threads.
 */
const HUNG_PINGS = 5;
/** Pings a thread that is not listening yet gets to start (loading its modules, a busy host). */
const START_PINGS = 30;
const PING_MS = 1000;
/** Waits before a dead thread is started again: the first, and the most (it keeps dying). */
const RESTART_MS = 250;
const RESTART_MAX_MS = 4000;
/** How long a scrape waits for a thread's fresh count before it takes its last reported one. */
const SCRAPE_WAIT_MS = 1000;

export interface WorkersOptions {
  /** The module a thread runs: main.ts, which serves as a gateway thread when it is in one. */
  module: string | URL;
  count: number;
  config: Config;
  /** Reads the config again (a reload). */
  load: () => Config;
  builtInConfig: boolean;
}

interface Thread {
  index: number;
  worker: Worker;
  /** Pings sent since its last answer (or since it was started). */
  unanswered: number;
  started: boolean;
  /** Its metrics as of its last pong: kept should it die before the next scrape. */
  snapshot?: MetricsSnapshot;
  listening: PromiseWithResolvers<Deno.NetAddr>;
  stopped: PromiseWithResolvers<void>;
  dead: boolean;
}

export class Workers {
  private readonly threads: Thread[] = [];
  private current: Config;
  private port: number;
  private readonly stores: SharedStores;
  /** Every thread's continuation pins (src/request/pins.ts), kept by the supervisor, as are they. */
  private readonly pins = new Pins();
  private readonly secrets: Secrets;
  /** The last counts (not gauges) of threads that died: a replaced thread starts from zero. */
  private readonly retired = new Metrics();
  private readonly scrapes = new Map<number, (snapshot: MetricsSnapshot) => void>();
  private scrapeIds = 0;
  private heartbeat?: ReturnType<typeof setInterval>;
  private stopping = false;
  /** Deaths in a row, for the restart's back-off. */
  private deaths = 0;
  /** Restarts waiting out their back-off: a stop cancels them. */
  private readonly restarts = new Set<ReturnType<typeof setTimeout>>();

  /** The config in force (a reload replaces it). */
  get config(): Config {
    return this.current;
  }

  /** Calls the threads made on the supervisor's stores (a key without limits makes none). */
  get storeCalls(): number {
    return this.stores.calls;
  }

  constructor(private readonly opts: WorkersOptions) {
    this.current = opts.config;
    this.port = opts.config.listen.port;
    this.stores = new SharedStores(opts.config.response_store);
    this.secrets = new Secrets(providerKeys(opts.config));
  }

  /**
   * Starts the threads: the first binds the configured port (port 0: any), the others the port
   * it got. Rejects as the first failure (an AddrInUse when the port is taken).
   */
  async start(): Promise<Deno.NetAddr> {
    try {
      const addr = await this.spawn(0).listening.promise;
      this.port = addr.port;
      for (let i = 1; i < this.opts.count; i++) this.spawn(i);
      await Promise.all(this.threads.map((t) => t.listening.promise));
      this.heartbeat = setInterval(() => this.check(), PING_MS);
      return addr;
    } catch (e) {
      this.stopping = true;
      for (const t of this.threads) t.worker.terminate();
      throw e;
    }
  }

  /** Re-reads and validates the config once; applied, every thread swaps it in. */
  reload(trigger: string): void {
    const { outcome, config } = decideReload(this.current, this.opts.load, trigger, this.stopping);
    if (config) {
      this.current = config;
      this.secrets.add(providerKeys(config));
      for (const t of this.threads) this.send(t, { t: "config", config });
    }
    reportReload(outcome, this.secrets);
  }

  /** The metrics of every thread, summed (and of the threads that died, as last reported). */
  async expose(): Promise<string> {
    const sum = new Metrics();
    sum.absorb(this.retired.snapshot());
    const snapshots = await Promise.all(this.threads.map((t) => this.metricsOf(t)));
    for (const s of snapshots) if (s) sum.absorb(s);
    return sum.expose();
  }

  /** Drains every thread (each as one gateway would), then ends them. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.heartbeat);
    for (const timer of this.restarts) clearTimeout(timer);
    this.restarts.clear();
    const { shutdown_delay_s, shutdown_grace_s } = this.current;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise((r) => {
      timer = setTimeout(r, (shutdown_delay_s + shutdown_grace_s + 5) * 1000);
    });
    for (const t of this.threads) this.send(t, { t: "stop" });
    await Promise.race([Promise.all(this.threads.map((t) => t.stopped.promise)), bound]);
    clearTimeout(timer);
    for (const t of this.threads) t.worker.terminate();
  }

  private spawn(index: number): Thread {
    const worker = new Worker(this.opts.module, { type: "module", name: `gateway-${index}` });
    const thread: Thread = {
      index,
      worker,
      unanswered: 0,
      started: false,
      listening: Promise.withResolvers(),
      stopped: Promise.withResolvers(),
      dead: false,
    };
    // Not awaited before it listens: a start failure rejects it.
    thread.listening.promise.catch(() => {});
    this.threads[index] = thread;
    worker.onmessage = (e: MessageEvent<FromWorker>) => this.heard(thread, e.data);
    worker.onerror = (e) => {
      // Unhandled, a thread's error would end the whole process.
      e.preventDefault();
      this.died(thread, e.message);
    };
    this.send(thread, {
      t: "start",
      index,
      config: this.current,
      port: this.port,
      builtInConfig: this.opts.builtInConfig,
    });
    return thread;
  }

  private heard(thread: Thread, m: FromWorker): void {
    switch (m.t) {
      case "listening":
        thread.started = true;
        thread.unanswered = 0;
        thread.listening.resolve({ transport: "tcp", hostname: m.hostname, port: m.port });
        return;
      case "failed": {
        const error = m.addrInUse ? new Deno.errors.AddrInUse(m.message) : new Error(m.message);
        thread.listening.reject(error);
        this.died(thread, m.message);
        return;
      }
      case "call":
        (m.store === "pins" ? this.pins.answer(m.op, m.args) : this.stores.answer(m)).then(
          (value) => this.send(thread, { t: "reply", id: m.id, value }),
          (e) => this.send(thread, { t: "reply", id: m.id, error: String(e?.message ?? e) }),
        );
        return;
      case "metrics":
        thread.snapshot = m.snapshot;
        this.scrapes.get(m.id)?.(m.snapshot);
        return;
      case "pong":
        thread.unanswered = 0;
        if (m.snapshot) thread.snapshot = m.snapshot;
        this.deaths = 0;
        return;
      case "stopped":
        thread.stopped.resolve();
    }
  }

  private send(thread: Thread, m: ToWorker): void {
    if (!thread.dead) thread.worker.postMessage(m);
  }

  /** A thread's metrics now, or as it last reported them if it does not answer in time. */
  private metricsOf(thread: Thread): Promise<MetricsSnapshot | undefined> {
    if (thread.dead) return Promise.resolve(undefined);
    const id = ++this.scrapeIds;
    const { promise, resolve } = Promise.withResolvers<MetricsSnapshot | undefined>();
    const timer = setTimeout(() => resolve(thread.snapshot), SCRAPE_WAIT_MS);
    this.scrapes.set(id, (s) => {
      clearTimeout(timer);
      resolve(s);
    });
    this.send(thread, { t: "metrics", id });
    return promise.finally(() => this.scrapes.delete(id));
  }

  /** Pings every thread; one silent for HUNG_PINGS pings in a row is ended and replaced. */
  private check(): void {
    for (const t of this.threads) {
      if (t.dead) continue;
      const limit = t.started ? HUNG_PINGS : START_PINGS;
      if (t.unanswered >= limit) {
        t.worker.terminate();
        this.died(t, `answered none of ${limit} pings, a second apart`);
        continue;
      }
      t.unanswered++;
      // One that is starting cannot answer yet: it is only counted.
      if (t.started) this.send(t, { t: "ping" });
    }
  }

  /** Logs a thread's end; its counts are kept; a new one takes its place. */
  private died(thread: Thread, error: string): void {
    if (thread.dead) return;
    thread.dead = true;
    thread.stopped.resolve();
    // At start, the first failure fails the start (nothing is restarted then).
    thread.listening.reject(new Error(error));
    // Its counts stay; its gauges go (its streams and WebSockets ended with it).
    if (thread.snapshot) this.retired.absorb(thread.snapshot, { gauges: false });
    if (this.stopping || !this.heartbeat) return;
    const delay = Math.min(RESTART_MS * 2 ** this.deaths++, RESTART_MAX_MS);
    const worker = thread.index;
    report({
      level: "error",
      msg: "worker died",
      worker,
      error: this.secrets.scrub(error),
      restart_in_ms: delay,
    });
    const restart = setTimeout(() => {
      this.restarts.delete(restart);
      this.spawn(worker).listening.promise.then(
        () => report({ level: "info", msg: "worker restarted", worker }),
        () => {},
      );
    }, delay);
    this.restarts.add(restart);
  }
}

/** A line about the threads, on stderr like every error (the access log may be off). */
function report(event: Record<string, unknown>): void {
  console.error(JSON.stringify({ time: new Date().toISOString(), ...event }));
}
