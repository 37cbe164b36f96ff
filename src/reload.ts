/**
 * Config reload (SIGHUP; in dev mode also a change to the config file): the config is read
 * again from where it came from, validated whole, and swapped in as a new gateway snapshot for
 * new requests. A request keeps the snapshot it started with (src/server.ts), so in-flight
 * streams finish on the provider, key and route they began with. An invalid config changes
 * nothing. See docs/reload.md.
 */
import { dirname, resolve } from "node:path";
import { KeyStore } from "./request/auth.ts";
import { sha256 } from "./request/sha256.ts";
import {
  applyListenEnv,
  checkFormats,
  type Config,
  ConfigError,
  defaultConfig,
  parseConfigText,
  providerKeys,
} from "./config/config.ts";
import type { Gateway } from "./request/context.ts";
import { logEvent } from "./ops/log.ts";
import type { Secrets } from "./ops/secrets.ts";
import type { Health } from "./state/health.ts";
import type { DefaultVendor } from "./kit/format.ts";
import type { Formats } from "./request/formats.ts";
import { LimitPolicy } from "./state/limits/policy.ts";
import { Router } from "./request/router.ts";
import { TrustedProxies } from "./config/trusted_proxies.ts";

/**
 * The parts of a snapshot built from the config alone: what a reload rebuilds. `vendors`: the
 * default vendors an unserved model's 404 suggests enabling (built-in config only).
 */
export function configured(
  config: Config,
  health?: Health,
  vendors: readonly DefaultVendor[] = [],
) {
  return {
    config,
    router: new Router(config, health, vendors),
    keys: KeyStore.from(config),
    policy: new LimitPolicy(config),
    proxies: new TrustedProxies(config.trusted_proxies),
  };
}

interface ConfigSource {
  /** The formats served: the config may only name theirs. */
  formats: Formats;
  /** `--config` / `GATEWAY_CONFIG`; absent: the built-in default from the environment. */
  path?: string;
  dev?: boolean;
  env: (name: string) => string | undefined;
  /** The dev key to use (deno task dev keeps it in a file); else one is generated once. */
  devKey?: string;
  /** Told the dev key when one is generated (once: re-reads reuse it). */
  onGeneratedKey?: (key: string) => void;
}

/** Returns a function that reads the config from `source`, the same way every time. */
export function configLoader(source: ConfigSource): () => Config {
  let devKey = source.devKey;
  return () => {
    const { path, env, formats } = source;
    const config = path
      ? parseConfigText(Deno.readTextFileSync(path), env, formats, dirname(resolve(path)))
      : defaultConfig(env, formats, {
        dev: source.dev,
        devKey,
        onGeneratedKey: (key) => {
          devKey = key;
          source.onGeneratedKey?.(key);
        },
      });
    checkFormats(config, formats);
    return applyListenEnv(config, env);
  };
}

/** Settings bound to what was built at startup: a reload reports them instead of applying. */
const RESTART_ONLY = [
  "listen",
  "workers",
  "response_store",
  "metrics",
  "limits_store",
] as const;

/** A short digest that tells configs apart in logs (keys included, never shown). */
function configDigest(config: Config): string {
  const digest = sha256(JSON.stringify(config)).subarray(0, 8);
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** What one reload did, as logged. */
export interface ReloadOutcome {
  outcome: "applied" | "rejected" | "ignored";
  trigger: string;
  digest?: string;
  previous_digest: string;
  /** Changed settings left as they were until a restart. */
  restart_required?: string[];
  /** Every bad field with its path (`rejected`), or why nothing was done (`ignored`). */
  errors?: string[];
}

/** A reload decided: what to log and, when applied, the config to swap in. */
export interface ReloadDecision {
  outcome: ReloadOutcome;
  config?: Config;
}

/**
 * Reads and validates the config again against `old` (the one in force): restart-only
 * settings stay as they run. Synchronous, so nothing sees it half-way; never throws.
 */
export function decideReload(
  old: Config,
  load: () => Config,
  trigger: string,
  draining: boolean,
): ReloadDecision {
  try {
    return attempt(old, load, trigger, draining);
  } catch (e) {
    // Called from a signal handler: nothing above would report it, and the old config stays.
    return {
      outcome: { outcome: "rejected", trigger, previous_digest: "", errors: [`failed: ${e}`] },
    };
  }
}

function attempt(
  old: Config,
  load: () => Config,
  trigger: string,
  draining: boolean,
): ReloadDecision {
  const previous_digest = configDigest(old);
  if (draining) {
    const errors = ["the gateway is shutting down"];
    return { outcome: { outcome: "ignored", trigger, previous_digest, errors } };
  }
  let config: Config;
  try {
    config = load();
  } catch (e) {
    // A ConfigError lists one bad field a line under a heading; a read error is one line.
    const errors = e instanceof ConfigError
      ? e.message.split("\n").map((l) => l.trim()).filter((l) => l && l !== "invalid config:")
      : [`cannot read the config: ${(e as Error).message}`];
    return { outcome: { outcome: "rejected", trigger, previous_digest, errors } };
  }
  const restart = RESTART_ONLY.filter((k) => JSON.stringify(config[k]) !== JSON.stringify(old[k]));
  // Those stay as they run, so the snapshot describes the gateway as it is.
  for (const k of restart) config = { ...config, [k]: old[k] };
  return {
    config,
    outcome: {
      outcome: "applied",
      trigger,
      digest: configDigest(config),
      previous_digest,
      ...(restart.length > 0 && { restart_required: [...restart] }),
    },
  };
}

/** Logs what a reload did: a `config_reload` line, and lines for people on stderr. */
export function reportReload(outcome: ReloadOutcome, secrets: Secrets): void {
  logEvent({ msg: "config_reload", ...outcome }, secrets);
  if (outcome.errors) {
    console.error(
      `gateway: reload ${outcome.outcome}, the config in force stays:\n  ${
        secrets.scrub(outcome.errors.join("\n  "))
      }`,
    );
  }
  if (outcome.outcome === "applied") {
    console.error(`gateway: config reloaded (${outcome.trigger}), digest ${outcome.digest}`);
  }
  if (outcome.restart_required) {
    console.error(
      `gateway: reload applied except ${outcome.restart_required.join(", ")}: restart to apply`,
    );
  }
}

/** Swaps `config` (validated) in as the gateway's snapshot for new requests. */
export function swapConfig(old: Gateway, config: Config): void {
  const { health, vendors } = old.router;
  const next: Gateway = { ...old, ...configured(config, health, vendors) };
  old.secrets.add(providerKeys(config));
  old.live.current = next;
  old.providerModels.reloaded();
}

/** Reloads the config of one gateway (one thread: `workers` reload through src/workers.ts). */
export class Reloader {
  constructor(private readonly gw: Gateway, private readonly load: () => Config) {}

  /** Re-reads, validates and swaps; logs the outcome (a `config_reload` line) and returns it. */
  reload(trigger: string): ReloadOutcome {
    const old = this.gw.live.current;
    let { outcome, config } = decideReload(old.config, this.load, trigger, old.draining);
    try {
      if (config) swapConfig(old, config);
    } catch (e) {
      // Called from a signal handler: nothing above would report it, and the old config stays.
      const { previous_digest } = outcome;
      outcome = { outcome: "rejected", trigger, previous_digest, errors: [`failed: ${e}`] };
    }
    reportReload(outcome, old.secrets);
    return outcome;
  }
}

/**
 * Calls `onChange` when the file at `path` changes (dev mode: `--watch` does not watch YAML).
 * The directory is watched, because editors often replace a file rather than write into it.
 */
export function watchConfigFile(path: string, onChange: () => void): Deno.FsWatcher {
  const file = Deno.realPathSync(path);
  const dir = file.slice(0, file.lastIndexOf("/")) || "/";
  const watcher = Deno.watchFs(dir, { recursive: false });
  let timer: ReturnType<typeof setTimeout> | undefined;
  (async () => {
    for await (const event of watcher) {
      if (!event.paths.includes(file) || event.kind === "access") continue;
      // One save is often several events: reload once they settle.
      clearTimeout(timer);
      timer = setTimeout(onChange, 100);
    }
    clearTimeout(timer);
  })();
  return watcher;
}
