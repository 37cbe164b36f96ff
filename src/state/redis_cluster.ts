/**
 * A Redis Cluster (`redis_cluster`: seed nodes), through node-redis's cluster client: each
 * command goes to the master of its keys' hash slot (a store's script keys share one slot: hash
 * tags). That client learns a new slot map only from a MOVED or ASK reply, which a dead master
 * never sends: it would keep dialling it after its replica took over. So a command that fails for
 * want of a node (no connection, no answer in time, CLUSTERDOWN), or a node's connection failing
 * (reconnects included, with no command sent: a thread or instance that served no request of the
 * dead master's slots learns too), makes this link ask a live node for the slot map at once and
 * then twice a second for a while, so a promoted replica is used within a second of its
 * promotion, without a restart. docs/scaling.md.
 */
import { createCluster, ErrorReply } from "redis";
import {
  CLIENT_OPTIONS,
  Deadlines,
  type RedisLink,
  RETRY_MAX_MS,
  retrySleep,
} from "./redis_client.ts";

/** How often the slot map is read while nodes fail, and for how long after the last failure. */
const REFRESH_MS = 500;
const TROUBLE_MS = 10_000;

/** Replies that say the cluster's layout changed or is changing, not that a command was wrong. */
const LAYOUT_REPLY = /^(CLUSTERDOWN|TRYAGAIN|MOVED|ASK)\b/;

type Cluster = ReturnType<typeof createCluster>;

export class ClusterLink implements RedisLink {
  private readonly cluster: Cluster;
  private readonly deadlines = new Deadlines();
  private connected = false;
  private closed = false;
  private retry?: ReturnType<typeof setTimeout>;
  private refresher?: ReturnType<typeof setInterval>;
  private troubleUntil = 0;
  private lastRefresh = 0;
  private refreshing?: Promise<void>;

  constructor(urls: string[], private readonly onError: (e: unknown) => void) {
    // Discovered nodes are dialled with the first seed's credentials and TLS.
    const first = new URL(urls[0]);
    this.cluster = createCluster({
      rootNodes: urls.map((url) => ({ url })),
      defaults: {
        ...CLIENT_OPTIONS,
        username: decodeURIComponent(first.username) || undefined,
        password: decodeURIComponent(first.password) || undefined,
        socket: first.protocol === "rediss:"
          ? { ...CLIENT_OPTIONS.socket, tls: true }
          : CLIENT_OPTIONS.socket,
      },
    });
    this.cluster.on("error", onError);
    // A node's client failing (the cluster's own `error` is not emitted for it): the master may
    // be gone, so the slot map is read until a replica serves its slots.
    this.cluster.on("node-error", () => this.trouble());
    this.connect();
  }

  get isReady(): boolean {
    return this.connected && this.cluster.isOpen;
  }

  eval(script: string, keys: string[], args: string[], ms: number): Promise<unknown> {
    return this.run(() => this.cluster.eval(script, { keys, arguments: args }), ms);
  }

  get(key: string, ms: number): Promise<unknown> {
    return this.run(() => this.cluster.get(key), ms);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.refresher);
    await this.refreshing;
    const clients = this.cluster.masters.flatMap((m) => m.client ? [m.client] : []);
    const sleeping = clients.map(retrySleep);
    try {
      this.cluster.destroy();
    } catch {
      // a node's client was closed already
    }
    await Promise.all(sleeping);
  }

  /** Until the slot map is read from a seed node (the cluster may be down at start). */
  private connect(): void {
    this.cluster.connect().then(
      () => {
        this.connected = true;
        if (this.closed) this.cluster.destroy();
      },
      (e) => {
        this.onError(e);
        if (!this.closed) this.retry = setTimeout(() => this.connect(), RETRY_MAX_MS);
      },
    );
  }

  private async run<T>(send: () => Promise<T>, ms: number): Promise<T> {
    try {
      return await this.deadlines.run(send, ms);
    } catch (e) {
      if (!(e instanceof ErrorReply) || LAYOUT_REPLY.test(e.message)) this.trouble();
      throw e;
    }
  }

  /** A node failed: read the slot map now, and every REFRESH_MS until TROUBLE_MS pass quietly. */
  private trouble(): void {
    if (this.closed) return;
    this.troubleUntil = Date.now() + TROUBLE_MS;
    this.refresh();
    this.refresher ??= setInterval(() => {
      if (Date.now() < this.troubleUntil) return this.refresh();
      clearInterval(this.refresher);
      this.refresher = undefined;
    }, REFRESH_MS);
  }

  private refresh(): void {
    if (this.closed || !this.connected || this.refreshing) return;
    if (Date.now() - this.lastRefresh < REFRESH_MS) return;
    this.lastRefresh = Date.now();
    // Asked of a master that answers (the dead one would not), else of the seed nodes.
    const clients = this.cluster.masters.flatMap((m) => m.client ? [m.client] : []);
    const start = clients.find((c) => c.isReady) ?? clients[0];
    if (!start) return;
    this.refreshing = this.cluster._slots.rediscover(start).catch(this.onError).finally(() =>
      this.refreshing = undefined
    );
  }
}
