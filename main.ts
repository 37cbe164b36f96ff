/**
 * Entry point: load the config (`--config PATH`, `GATEWAY_CONFIG`, or the built-in default),
 * serve, reload it on SIGHUP (and in dev mode when the file changes), and drain gracefully on
 * SIGTERM/SIGINT.
 */
import { PLUGINS } from "./plugins/mod.ts";
import { PLATFORMS } from "./plugins/platforms/mod.ts";
import { codexConfig } from "./plugins/responses/codex.ts";
import { type Config, ConfigError, stableDevKey } from "./src/config/config.ts";
import { Formats } from "./src/request/formats.ts";
import { NO_LOG, setAccessLogSink } from "./src/ops/log.ts";
import { serveMetrics } from "./src/ops/metrics.ts";
import { configLoader, Reloader, watchConfigFile } from "./src/reload.ts";
import { modelSettings } from "./src/request/router.ts";
import { createGateway, createHandler } from "./src/server.ts";

const env = (name: string) => Deno.env.get(name);

/** Seconds the endings of cut streams get to reach their clients before the process exits. */
const FLUSH_S = 1;

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
 * The start-up lines: where it listens; its own pid and the reload command (under `npx` or
 * `deno task` the pid a user sees is the wrapper's, which a SIGHUP would end); the dev key last,
 * where a newcomer looks.
 */
function announce(devKey: string | undefined) {
  return ({ hostname, port }: Deno.NetAddr) => {
    console.error(`gateway listening on http://${hostname}:${port}`);
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
  // A config file ignores the vendor keys the built-in config reads: no hint names them then.
  const gw = await createGateway(config, formats, { builtInConfig: !path });
  // Its own listener: Kong routes the gateway's port only, so /metrics never reaches clients.
  let metrics: Deno.HttpServer | undefined;
  if (config.metrics) {
    const { hostname, port } = config.metrics;
    try {
      metrics = serveMetrics(
        gw.metrics,
        config.metrics,
        (addr) => console.error(`metrics on http://${addr.hostname}:${addr.port}/metrics`),
      );
    } catch (e) {
      startFailed(
        cannotListen(
          e,
          "serve metrics",
          `${hostname}:${port}`,
          "set METRICS_PORT to another port, or to off",
        ),
        dev,
      );
    }
  }
  // Set up before the listening line, so a change right after it is not missed.
  const reloader = new Reloader(gw, loadConfig);
  // Windows has no SIGHUP (Deno throws there); the dev-mode file watch still works.
  if (Deno.build.os !== "windows") {
    Deno.addSignalListener("SIGHUP", () => reloader.reload("SIGHUP"));
  }
  if (dev && path) watchConfigFile(path, () => reloader.reload("file changed"));
  const { hostname, port } = config.listen;
  let server: Deno.HttpServer;
  try {
    server = Deno.serve({ hostname, port, onListen: announce(devKey) }, createHandler(gw));
  } catch (e) {
    const setting = "set PORT to another port (or listen.port in the config file)";
    startFailed(cannotListen(e, "listen", `${hostname}:${port}`, setting), dev);
  }
  // The providers' own model lists, read in the background for GET /v1/models.
  gw.providerModels.start();

  let stopping = false;
  const sleep = (s: number) => new Promise((resolve) => setTimeout(resolve, s * 1000));
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Unready first (and new requests get 503) so health checks can move traffic away, then
    // close the listener and give in-flight streams a bounded time to finish.
    const { config } = gw.live.current;
    gw.live.current.draining = true;
    console.error(`gateway: ${signal}, draining for up to ${config.shutdown_grace_s} s`);
    await sleep(config.shutdown_delay_s);
    gw.closingSockets.abort();
    const drained = server.shutdown();
    await Promise.race([drained, sleep(config.shutdown_grace_s)]);
    // What is still open is told so: streams end with the interruption ending, WebSockets
    // close with 1001. A moment lets those endings reach the clients.
    gw.stopping.stop();
    await Promise.race([drained, sleep(FLUSH_S)]);
    await metrics?.shutdown();
    await gw.providerModels.stop();
    Deno.exit(0);
  };
  // Under `deno run --watch` (the dev task) a SIGTERM would end only this program and leave the
  // watcher waiting for edits; the watcher stops itself on SIGINT, so pass it on as one.
  Deno.addSignalListener("SIGTERM", () => dev ? Deno.kill(Deno.pid, "SIGINT") : stop("SIGTERM"));
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
}

if (import.meta.main) await main();
