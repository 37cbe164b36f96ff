/**
 * Entry point: load the config (`--config PATH`, `GATEWAY_CONFIG`, or the built-in default),
 * serve, reload it on SIGHUP (and in dev mode when the file changes), and drain gracefully on
 * SIGTERM/SIGINT.
 */
import { PLUGINS } from "./plugins/mod.ts";
import { PLATFORMS } from "./plugins/platforms/mod.ts";
import { codexConfig } from "./plugins/responses/codex.ts";
import { type Config, ConfigError, stableDevKey, workerCount } from "./src/config/config.ts";
import { Formats } from "./src/request/formats.ts";
import { NO_LOG, setAccessLogSink } from "./src/ops/log.ts";
import { serveMetrics } from "./src/ops/metrics.ts";
import { configLoader, Reloader, watchConfigFile } from "./src/reload.ts";
import { modelSettings } from "./src/request/router.ts";
import { createGateway, createHandler } from "./src/server.ts";
import { drain } from "./src/drain.ts";
import { inWorker, serveWorker } from "./src/worker.ts";
import { Workers } from "./src/workers.ts";

const env = (name: string) => Deno.env.get(name);

/** Git-ignored; keeps the dev key, so a copied key survives the watcher's restarts. */
const DEV_KEY_FILE = ".gateway/dev-key";

function argValue(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  if (i >= 0) return args[i + 1];
  return args.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);
}

/**
 * Ends the gateway on a start-up failure, with one line saying why. Under `deno task dev` the
 * `--watch` runner would wait for an edit instead: it stops on SIGINT, so it gets one.
 */
function startFailed(message: string, dev: boolean): never {
  console.error(`gateway: ${message}`);
  if (dev) Deno.kill(Deno.pid, "SIGINT");
  Deno.exit(2);
}

/**
 * Why a listener (`what`: "listen", "serve metrics") could not open at `address`, and what to
 * change (`setting`: where its port is set).
 */
function cannotListen(e: unknown, what: string, address: string, setting: string): string {
  const why = e instanceof Deno.errors.AddrInUse
    ? "the address is already in use (another gateway?)"
    : (e as Error).message;
  return `cannot ${what} on ${address}: ${why}; ${setting}`;
}

/**
 * Said at start while Kong's consumer headers are believed: they are only as good as the Kong
 * in front, and kong.yml alone authenticates nobody.
 */
const KONG_CONSUMERS_WARNING = "gateway: warning: identities.kong_consumers is on: X-Consumer-* " +
  "headers from trusted_proxies name the identity, so every Kong route to the gateway must " +
  "authenticate — sync kong.yml with kong.consumers.yml (docs/kong.md), never kong.yml alone";

/**
 * The start-up lines: where it listens; its own pid and the reload command (under `npx` or
 * `deno task` the pid a user sees is the wrapper's, which a SIGHUP would end); the dev key last,
 * where a newcomer looks.
 */
function announce(devKey: string | undefined, workers = 1) {
  return ({ hostname, port }: Deno.NetAddr) => {
    const threads = workers > 1 ? ` (${workers} workers)` : "";
    console.error(`gateway listening on http://${hostname}:${port}${threads}`);
    if (Deno.build.os !== "windows") {
      console.error(`gateway pid ${Deno.pid}; reload the config with: kill -HUP ${Deno.pid}`);
    }
    if (devKey) {
      console.error(
        `dev mode: no GATEWAY_API_KEYS set; use this key: ${devKey} (kept in ${DEV_KEY_FILE})`,
      );
    }
  };
}

async function main() {
  const path = argValue(Deno.args, "--config") ?? env("GATEWAY_CONFIG");
  const dev = Deno.args.includes("--dev");
  // The dev key is printed last, after the listening line, where a newcomer looks.
  const devKey = dev && !path && !env("GATEWAY_API_KEYS") ? stableDevKey(DEV_KEY_FILE) : undefined;
  // The formats served: the core knows them only through these plugins.
  const formats = new Formats(PLUGINS, PLATFORMS);
  const loadConfig = configLoader({ formats, path, dev, env, devKey });
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    // Invalid config, or a file that cannot be read (missing, not permitted, a directory…).
    const what = e instanceof ConfigError ? "" : "cannot read the config: ";
    console.error(`gateway: ${what}${(e as Error).message}`);
    Deno.exit(2);
  }
  // `--codex-config MODEL [--base-url URL]`: print Codex's settings for a model and exit.
  const codexModel = argValue(Deno.args, "--codex-config");
  if (codexModel) {
    const base = argValue(Deno.args, "--base-url") ??
      `http://${config.listen.hostname}:${config.listen.port}`;
    try {
      console.log(codexConfig(modelSettings(config, codexModel), base));
    } catch (e) {
      console.error(`gateway: ${(e as Error).message}`);
      Deno.exit(2);
    }
    Deno.exit(0);
  }
  if (env("GATEWAY_ACCESS_LOG") === "off") setAccessLogSink(NO_LOG);
  if (config.identities.kong_consumers) console.error(KONG_CONSUMERS_WARNING);
  const run: Run = { config, loadConfig, formats, path, dev, devKey };
  const count = workerCount(config.workers);
  await (count > 1 ? superviseWorkers(run, count) : serveOne(run));
}

/** What both ways of running read: the config, how to read it again, the formats served. */
interface Run {
  config: Config;
  loadConfig: () => Config;
  formats: Formats;
  path?: string;
  dev: boolean;
  devKey?: string;
}

/** One gateway in this thread (`workers: 1`, the default). */
async function serveOne({ config, loadConfig, formats, path, dev, devKey }: Run) {
  // A config file ignores the vendor keys the built-in config reads: no hint names them then.
  const gw = await createGateway(config, formats, { builtInConfig: !path });
  const metrics = metricsListener(config, gw.metrics, dev);
  // Set up before the listening line, so a change right after it is not missed.
  const reloader = new Reloader(gw, loadConfig);
  reloadOn((trigger) => reloader.reload(trigger), dev, path);
  const { hostname, port } = config.listen;
  let server: Deno.HttpServer;
  try {
    server = Deno.serve({ hostname, port, onListen: announce(devKey) }, createHandler(gw));
  } catch (e) {
    startFailed(cannotListen(e, "listen", `${hostname}:${port}`, PORT_SETTING), dev);
  }
  // The providers' own model lists, read in the background for GET /v1/models.
  gw.providerModels.start();
  stopOn(() => gw.live.current.config, async () => {
    await drain(gw, server);
    await metrics?.shutdown();
  }, dev);
}

/**
 * `workers: N` (N > 1): N gateway threads on one port, this thread their supervisor
 * (src/workers.ts): it validates reloads, sums `/metrics`, drains them all and replaces a dead one.
 */
async function superviseWorkers({ config, loadConfig, path, dev, devKey }: Run, count: number) {
  // Only Linux balances connections over sockets sharing a port (elsewhere the second bind fails).
  if (Deno.build.os !== "linux") {
    startFailed(`workers: ${count} needs Linux (reusePort); run workers: 1 processes here`, dev);
  }
  const workers = new Workers({
    module: import.meta.url,
    count,
    config,
    load: loadConfig,
    builtInConfig: !path,
  });
  const metrics = metricsListener(config, workers, dev);
  reloadOn((trigger) => workers.reload(trigger), dev, path);
  const { hostname, port } = config.listen;
  try {
    announce(devKey, count)(await workers.start());
  } catch (e) {
    startFailed(cannotListen(e, "listen", `${hostname}:${port}`, PORT_SETTING), dev);
  }
  stopOn(() => workers.config, async () => {
    await workers.stop();
    await metrics?.shutdown();
  }, dev);
}

const PORT_SETTING = "set PORT to another port (or listen.port in the config file)";

/** `GET /metrics` on a listener of its own: Kong routes the gateway's port only. */
function metricsListener(
  config: Config,
  metrics: { expose(): string | Promise<string> },
  dev: boolean,
): Deno.HttpServer | undefined {
  if (!config.metrics) return undefined;
  const { hostname, port } = config.metrics;
  try {
    return serveMetrics(
      metrics,
      config.metrics,
      (addr) => console.error(`metrics on http://${addr.hostname}:${addr.port}/metrics`),
    );
  } catch (e) {
    const setting = "set METRICS_PORT to another port, or to off";
    startFailed(cannotListen(e, "serve metrics", `${hostname}:${port}`, setting), dev);
  }
}

/** Reloads on SIGHUP, and in dev mode when the config file changes. */
function reloadOn(reload: (trigger: string) => void, dev: boolean, path?: string) {
  // Windows has no SIGHUP (Deno throws there); the dev-mode file watch still works.
  if (Deno.build.os !== "windows") Deno.addSignalListener("SIGHUP", () => reload("SIGHUP"));
  if (dev && path) watchConfigFile(path, () => reload("file changed"));
}

/** Drains (`drainAll`) on SIGTERM or SIGINT, then exits. */
function stopOn(config: () => Config, drainAll: () => Promise<void>, dev: boolean) {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`gateway: ${signal}, draining for up to ${config().shutdown_grace_s} s`);
    await drainAll();
    Deno.exit(0);
  };
  // Under `deno run --watch` (the dev task) a SIGTERM would end only this program and leave the
  // watcher waiting for edits; the watcher stops itself on SIGINT, so pass it on as one.
  Deno.addSignalListener("SIGTERM", () => dev ? Deno.kill(Deno.pid, "SIGINT") : stop("SIGTERM"));
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
}

// A gateway thread of `workers` runs this module too: it serves as its supervisor tells it.
if (inWorker()) {
  if (env("GATEWAY_ACCESS_LOG") === "off") setAccessLogSink(NO_LOG);
  serveWorker(new Formats(PLUGINS, PLATFORMS));
} else if (import.meta.main) await main();
