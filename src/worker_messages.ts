/** What the supervisor thread and its gateway threads (`workers`) say to each other. */
import type { Config } from "./config/config.ts";
import type { MetricsSnapshot } from "./ops/metrics.ts";
import type { StoreCall } from "./state/shared_stores.ts";

export type ToWorker =
  /** The first message: serve `config` on `port` (the one the first thread bound). */
  | { t: "start"; index: number; config: Config; port: number; builtInConfig: boolean }
  /** A reload the supervisor validated: swap it in. */
  | { t: "config"; config: Config }
  /** Drain and end (SIGTERM/SIGINT). */
  | { t: "stop" }
  /** Report the metrics now (a scrape). */
  | { t: "metrics"; id: number }
  /** Are you alive? */
  | { t: "ping" }
  | { t: "reply"; id: number; value?: unknown; error?: string };

export type FromWorker =
  | { t: "listening"; hostname: string; port: number }
  /** Could not start (the port taken…): one line saying why. */
  | { t: "failed"; message: string; addrInUse: boolean }
  | StoreCall
  | { t: "metrics"; id: number; snapshot: MetricsSnapshot }
  /** Alive; with the metrics as they stand, when collected (kept should the thread die). */
  | { t: "pong"; snapshot?: MetricsSnapshot }
  | { t: "stopped" };
