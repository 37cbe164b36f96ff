/**
 * Configuration: a YAML file (or the built-in default), `${ENV}` substitution in every string,
 * key files read at every load, and a zod schema whose errors name the path of each bad field.
 */
import { z } from "zod";
import { isAbsolute, join } from "node:path";
import type { DefaultVendor, FormatPlugin, UpstreamSpec } from "../kit/format.ts";
import { isAddressOrCidr } from "./trusted_proxies.ts";
import { globToRegExp } from "./glob.ts";
import { formatPath } from "../kit/validate.ts";
import { type CredentialFileError, readCredentialFile } from "../kit/credential_file.ts";
import { configIssues, type Issue, issueReport } from "./issues.ts";
import { readYaml, YamlProblem } from "./yaml.ts";
import { ONE_REDIS, oneRedis, redisClusterSchema, redisUrlSchema } from "./redis_url.ts";
import {
  CONSUMER_PREFIX,
  consumersSchema,
  identitiesSchema,
  keyLimitFields,
  limitsStoreSchema,
  priceSchema,
} from "./limits.ts";

/** The core's own provider api: answers locally, no upstream (src/request/demo.ts). */
export const DEMO_API = "demo";

/** What validation asks of the format registry (src/request/formats.ts), seen from here. */
interface KnownFormats {
  /** The provider apis a config may name. */
  readonly ids: readonly string[];
  readonly vendors: readonly (DefaultVendor & { api: string })[];
  readonly plugins: readonly Pick<FormatPlugin<unknown>, "id" | "passthroughRoutes">[];
  get(api: string): Pick<FormatPlugin<unknown>, "passthroughRoutes"> | undefined;
  upstream(api: string): UpstreamSpec | undefined;
  /** The platforms served: they judge their providers' `platform`, api, block and base_url. */
  readonly platforms?: KnownPlatforms;
}

/** What validation asks of the platform registry (src/request/platforms.ts). */
export interface KnownPlatforms {
  /** What is wrong with a provider that names a platform, at paths below the provider. */
  check(provider: ProviderConfig): Issue[];
  /** Why a model cannot be sent to `provider`'s platform. */
  unsafeModel(provider: ProviderConfig, model: string): string | undefined;
}

const timeoutsSchema = z.strictObject({
  /** Until an upstream WebSocket is open (connect + handshake). */
  connect_ms: z.number().int().positive().default(15_000),
  /** Until the response headers, and again until a stream's first body byte. */
  first_byte_ms: z.number().int().positive().default(300_000),
  /** Longest silence between two chunks of a stream. */
  idle_ms: z.number().int().positive().default(300_000),
});

/**
 * The keys in a key file: one a line; blank lines and `#` comments are skipped. Read at every
 * load, so editing the file and reloading rotates the key (the environment cannot change).
 */
function readKeyFile(path: string): string[] {
  return readCredentialFile(path).split("\n").map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
}

/** A key file's keys, or an issue at `at` saying why they cannot be used. */
function keysFromFile(
  path: string,
  at: PropertyKey[],
  ctx: z.RefinementCtx,
): string[] | undefined {
  const fail = (message: string) => void ctx.addIssue({ code: "custom", path: at, message });
  let keys: string[];
  try {
    keys = readKeyFile(path);
  } catch (e) {
    return fail((e as CredentialFileError).message);
  }
  if (keys.length === 0) return fail("the file holds no key");
  const short = keys.findIndex((k) => k.length < 8);
  // Never the key itself: only where it is.
  if (short >= 0) return fail(`the file's key ${short + 1} is shorter than 8 characters`);
  return keys;
}

/** What the gateway sends of prompt caching on converted requests (src/request/prompt_cache.ts). */
const promptCacheSchema = z.enum(["auto", "client", "off"]);

const providerFields = z.object({
  name: z.string().min(1),
  /** A format plugin's id (checked against the plugins by checkFormats), or `demo`. */
  api: z.string().min(1),
  /**
   * A platform plugin's id (src/kit/platform.ts): how the api is reached. Absent: the
   * vendor's own API. Its block (`aws:`) is checked by the platform's schema in checkFormats.
   */
  platform: z.string().min(1).optional(),
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  api_key: z.string().optional(),
  /** A file holding the key instead (read at every load: the way to rotate it). */
  api_key_file: z.string().min(1).optional(),
  /** A pool of keys used round-robin (exclusive with `api_key`); logged as `<name>#<index>`. */
  api_keys: z.array(z.string().min(1)).min(1).optional(),
  /** max_tokens sent to APIs that require one when the client gave none. */
  default_max_tokens: z.number().int().positive().default(8192),
  /** Largest non-stream answer read from the provider (MiB); a larger one is a 502. */
  max_body_mb: z.number().positive().max(256).default(32),
  timeouts: timeoutsSchema.prefault({}),
  /**
   * Reuse upstream connections. Deno's fetch re-sends a request whose reused HTTP/1.1
   * connection the provider closed after reading it, unseen by the gateway's retry policy; a
   * fresh connection per call is never re-sent. Default: on for https (HTTP/2 in practice,
   * whose replays are limited to streams the provider refused) and for a platform's default
   * base URL (https), off for plain http.
   */
  keep_alive: z.boolean().optional(),
  /** The default `prompt_cache` policy of the routes that send to it (a route's own wins). */
  prompt_cache: promptCacheSchema.optional(),
});

/**
 * A provider: its own fields, and the block its platform reads (`aws:`, checked by the platform
 * in checkFormats). A provider without a platform takes no other key.
 */
const providerSchema = providerFields.catchall(z.unknown()).superRefine((p, ctx) => {
  const blocks = Object.keys(providerBlocks(p));
  if (blocks.length && p.platform === undefined) {
    ctx.addIssue({ code: "unrecognized_keys", keys: blocks, input: p });
  }
}).transform(({ api_key_file, keep_alive, ...raw }, ctx) => {
  const https = raw.base_url?.startsWith("https:") ?? raw.platform !== undefined;
  const p = { ...raw, keep_alive: keep_alive ?? https };
  if (api_key_file === undefined) return p;
  if (p.api_key !== undefined) {
    const message = "give api_key or api_key_file, not both";
    ctx.addIssue({ code: "custom", path: ["api_key_file"], message });
    return p;
  }
  const keys = keysFromFile(api_key_file, ["api_key_file"], ctx);
  if (keys && keys.length > 1) {
    const message = `the file holds ${keys.length} keys; a provider takes one`;
    ctx.addIssue({ code: "custom", path: ["api_key_file"], message });
  }
  return { ...p, api_key: keys?.[0] };
});

/** A provider's keys other than its own fields: the blocks its platform reads. */
export function providerBlocks(p: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(p).filter(([k]) => !(k in providerFields.shape)));
}

/** One deployment a route may send to; `targets` are tried by priority, then weight. */
const targetSchema = z.strictObject({
  provider: z.string().min(1),
  /** Upstream model name; default: the route's `model`, else the requested one. */
  model: z.string().min(1).optional(),
  /** Share among targets of equal priority (smooth weighted round-robin). */
  weight: z.number().int().positive().default(1),
  /** Lower is tried first; default: the target's position in the list. */
  priority: z.number().int().min(0).optional(),
});

/**
 * Neutral error kinds a route may retry on (`retry.on`), whatever status the provider's format
 * gives them (the messages plugin reads a 529 as `overloaded`).
 */
const RETRYABLE_KINDS = ["rate_limit", "overloaded", "timeout", "upstream"] as const;
const DEFAULT_RETRY_ON = [408, 429, 500, 502, 503, 504, "overloaded"] as const;
const NEVER_RETRIED = [400, 404, 413, 422];

const retrySchema = z.strictObject({
  /** Upstream attempts in total for one request, across targets, the first included. */
  attempts: z.number().int().min(1).max(20).default(3),
  /**
   * Provider statuses (as the provider answered) and error kinds worth another attempt
   * (connection failures and timeouts always are).
   */
  on: z.array(
    z.union([
      z.number().int().min(400).max(599).refine(
        (n) => !NEVER_RETRIED.includes(n),
        "400, 404, 413 and 422 are the client's own errors: never retried",
      ),
      z.enum(RETRYABLE_KINDS),
    ], { error: `expected an HTTP status or one of ${RETRYABLE_KINDS.join(", ")}` }),
  ).default([...DEFAULT_RETRY_ON]),
  /** Longest a request may sleep for a provider's retry-after (0: go to the next target). */
  max_wait_s: z.number().min(0).default(0),
});

export const DEFAULT_RETRY = retrySchema.parse({});

const cooldownSchema = z.strictObject({
  /** Consecutive failures that take a target out of rotation. */
  failures: z.number().int().positive().default(3),
  /** How long it stays out (it comes back by itself). */
  seconds: z.number().positive().default(30),
  /** Longest a provider's retry-after may cool a target or pool key (a hint, not an order). */
  max_seconds: z.number().positive().default(300),
});

const longDecodeSchema = z.strictObject({
  mode: z.enum(["auto", "off"]).default("auto"),
  /** Requests in all for one answer, the first included. */
  max_hops: z.number().int().min(1).max(1024).default(32),
});

export const DEFAULT_LONG_DECODE = longDecodeSchema.parse({});

const routeSchema = z.strictObject({
  /** Names the route in metrics (`route` label); default: its first model pattern. */
  name: z.string().min(1).optional(),
  models: z.array(z.string().min(1)).min(1),
  /** One-target shorthand for `targets: [{provider}]`. */
  provider: z.string().min(1).optional(),
  targets: z.array(targetSchema).min(1).optional(),
  /** `weighted`: every target shares one priority (load-balanced by weight). */
  balance: z.enum(["weighted"]).optional(),
  /** Absent: DEFAULT_RETRY. */
  retry: retrySchema.optional(),
  /** Overrides the global `cooldown` for this route's targets. */
  cooldown: cooldownSchema.optional(),
  /** Upstream model name; default: the requested one. */
  model: z.string().min(1).optional(),
  /** Overrides the provider's `default_max_tokens` for this route's models. */
  default_max_tokens: z.number().int().positive().optional(),
  passthrough: z.boolean().default(false),
  /**
   * `false`: the gateway keeps no response of this route (zero retention): answers say
   * `store: false` and `previous_response_id` is refused. Converted routes only; absent: true.
   */
  store: z.boolean().optional(),
  /** `false`: POST /v1/responses/compact is refused on this converted route. Absent: true. */
  compact: z.boolean().optional(),
  /**
   * Hosted tools (web search, …) on converted routes: `map` to the target's own where it has
   * one (else drop and report), `drop` them all (reported), or `reject` them with a 400.
   * Absent: `map`.
   */
  hosted_tools: z.enum(["map", "drop", "reject"]).optional(),
  /**
   * Long decode on converted routes (providers that stop a long answer with a continuation
   * token): `auto` sends the hops and answers once; `off` ends at the first hop's cap as a
   * length stop. Absent: `auto`, 32 hops.
   */
  long_decode: longDecodeSchema.optional(),
  /**
   * Prompt caching on converted requests: `auto` places breakpoints (and keys) where a session's
   * prefix is stable, `client` carries only the client's own, `off` sends none. Absent: the
   * provider's `prompt_cache`, else `auto`.
   */
  prompt_cache: promptCacheSchema.optional(),
}).refine((r) => !r.passthrough || (r.store !== false && r.compact !== false), {
  path: ["passthrough"],
  message: "store: false and compact: false apply to converted routes; a passthrough route's " +
    "provider keeps its own Responses state",
});

/** Where a client key entry takes its key from: exactly one of these. */
const KEY_SOURCES = ["key", "sha256", "key_file"] as const;

/**
 * A client key: the key itself, its SHA-256, or a file whose every key is accepted under the
 * entry's name (old and new while rotating). One object, not a union of three, so a bad field
 * is reported at its own path whichever source the entry uses.
 */
const keySchema = z.strictObject({
  name: z.string().min(1),
  key: z.string().min(8).optional(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/i, "expected 64 hex digits").optional(),
  key_file: z.string().min(1).optional(),
  ...keyLimitFields,
}).superRefine((k, ctx) => {
  const given = KEY_SOURCES.filter((f) => k[f] !== undefined);
  if (given.length !== 1) {
    const message = `expected exactly one of ${KEY_SOURCES.join(", ")}`;
    ctx.addIssue({ code: "custom", path: given.length ? [given[1]] : [], message });
  }
});

type KeyEntry = Omit<z.infer<typeof keySchema>, (typeof KEY_SOURCES)[number]>;
/** A key entry as loaded: its key or the key's SHA-256. */
type LoadedKey = KeyEntry & ({ key: string } | { sha256: string });

/** Client keys as loaded: a `key_file` entry becomes one `key` entry per key in the file. */
const keysSchema = z.array(keySchema).min(1).superRefine((entries, ctx) => {
  // A name is an identity: stored responses belong to it, so two parties must not share one.
  const seen = new Set<string>();
  entries.forEach((k, i) => {
    if (seen.has(k.name)) {
      const message = "a name another key has: a name is one client's identity";
      ctx.addIssue({ code: "custom", path: [i, "name"], message });
    }
    if (k.name.startsWith(CONSUMER_PREFIX)) {
      const message =
        `a key name may not begin with "${CONSUMER_PREFIX}" (Kong consumers' names do)`;
      ctx.addIssue({ code: "custom", path: [i, "name"], message });
    }
    seen.add(k.name);
  });
}).transform((entries, ctx) =>
  entries.flatMap(({ key, sha256, key_file, ...entry }, i): LoadedKey[] => {
    if (key !== undefined) return [{ ...entry, key }];
    if (sha256 !== undefined) return [{ ...entry, sha256 }];
    const keys = keysFromFile(key_file!, [i, "key_file"], ctx);
    return (keys ?? []).map((key) => ({ ...entry, key }));
  })
);

/** Where stored Responses (for `previous_response_id` and GET /v1/responses/{id}) are kept. */
const responseStoreSchema = z.strictObject({
  /** `false`: no response is kept on any converted route (zero retention). */
  enabled: z.boolean().default(true),
  /** Memory bound of the embedded store, oldest evicted first (MiB of JSON text). */
  max_mb: z.number().positive().default(256),
  /**
   * One client key's share of `max_mb` (default a quarter): past it, the key's own oldest
   * responses are evicted, never another key's.
   */
  max_mb_per_key: z.number().positive().optional(),
  /** Seconds a stored response lives (default 30 days). */
  ttl_s: z.number().int().positive().default(2_592_000),
  /** A larger response is answered but not kept (MiB of JSON text). */
  max_item_mb: z.number().positive().default(16),
  /** Keep responses in Redis instead (shared by every instance; TTL set in Redis). */
  redis_url: redisUrlSchema.optional(),
  /** Keep them in a Redis Cluster instead: its seed nodes (docs/scaling.md). */
  redis_cluster: redisClusterSchema.optional(),
  /** Prefix of every Redis key the store writes. */
  redis_prefix: z.string().min(1).default("gateway:responses:"),
  /** Longest wait for one Redis command: a stalled Redis fails the call, it never hangs it. */
  redis_timeout_ms: z.number().int().positive().default(1000),
}).refine(oneRedis, { message: ONE_REDIS, path: ["redis_cluster"] });

/** A concrete model id for the model lists (the names behind pattern routes). */
const catalogSchema = z.strictObject({
  id: z.string().min(1).regex(/^[^*]+$/, "a concrete model id, not a pattern"),
  display_name: z.string().min(1).optional(),
  context_window: z.number().int().positive().optional(),
  max_output_tokens: z.number().int().positive().optional(),
});

/** `workers`: gateway threads serving one port; `auto` is one per core (docs/scaling.md). */
const workersSchema = z.union([z.number().int().min(1).max(256), z.literal("auto")], {
  error: 'expected a number of workers (1 to 256) or "auto"',
});

export const configSchema = z.strictObject({
  listen: z.strictObject({
    hostname: z.string().default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8080),
  }).prefault({}),
  workers: workersSchema.default(1),
  keys: keysSchema,
  providers: z.array(providerSchema).min(1),
  routes: z.array(routeSchema).min(1),
  response_store: responseStoreSchema.prefault({}),
  /** When a failing target is skipped, for routes without their own `cooldown`. */
  cooldown: cooldownSchema.prefault({}),
  /** Model ids listed by GET /v1/models and /v1beta/models besides routes without a `*`. */
  catalog: z.array(catalogSchema).default([]),
  /** Seconds between turning unready (/readyz 503) and closing the listener on shutdown. */
  shutdown_delay_s: z.number().min(0).default(0),
  /** Seconds a draining shutdown then waits for in-flight streams. */
  shutdown_grace_s: z.number().min(0).default(10),
  /**
   * Longest time a request body may take to arrive, whole, from the first read (a 408 in the
   * client's dialect after it; docs/security-and-faults.md#client-limits).
   */
  request_body_timeout_ms: z.number().int().positive().default(60_000),
  websocket: z.strictObject({
    /** A larger client message gets an error frame and close 1009 (Deno's own cap: 64 MiB). */
    max_message_bytes: z.number().int().positive().max(64 * 1024 * 1024).default(16 * 1024 * 1024),
    /** A socket whose client sent nothing for this long is closed (pings do not count). */
    idle_timeout_s: z.number().positive().default(4200),
  }).prefault({}),
  /**
   * Peers whose `X-Forwarded-For` is believed (Kong's addresses): addresses or CIDRs. The
   * client address is the right-most hop that is not one of them.
   */
  trusted_proxies: z.array(z.string().refine(isAddressOrCidr, "expected an IP address or CIDR"))
    .default(["127.0.0.0/8", "::1"]),
  /** Kong consumers' limits (`identities.kong_consumers`); docs/limits.md. */
  consumers: consumersSchema.prefault({}),
  identities: identitiesSchema.prefault({}),
  /** USD per million tokens by upstream model (globs); the first match wins. */
  prices: z.array(priceSchema).default([]),
  /** Where limit windows are counted (default: in memory). */
  limits_store: limitsStoreSchema.prefault({}),
  /**
   * `GET /metrics` (Prometheus text format) on a listener of its own, which Kong does not
   * route. Off when absent; port 0 takes any free port.
   */
  metrics: z.strictObject({
    hostname: z.string().default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(9464),
    /** Distinct model label values kept; further ones are counted as `other`. */
    max_label_values: z.number().int().positive().default(1000),
  }).optional(),
});

export type { Issue };

/**
 * Cross-references (route → provider, catalog → route) checked on the raw document, so they
 * are reported together with type errors elsewhere in the file.
 */
function crossCheck(doc: unknown, formats?: KnownFormats): Issue[] {
  const d = (doc ?? {}) as { providers?: unknown; routes?: unknown };
  const providers = Array.isArray(d.providers) ? d.providers : [];
  const routes = Array.isArray(d.routes) ? d.routes : [];
  const issues: Issue[] = [];
  const byName = new Map<unknown, { api?: unknown; base_url?: unknown }>();
  providers.forEach((p, i) => {
    if (byName.has(p?.name)) {
      issues.push({ path: ["providers", i, "name"], message: "a name another provider has" });
    }
    byName.set(p?.name, p ?? {});
    const unknown = formats && typeof p?.api === "string" && unknownApi(p.api, formats);
    if (unknown) issues.push({ path: ["providers", i, "api"], message: unknown });
    else if (
      typeof p?.api === "string" && p.api !== DEMO_API && !p?.base_url && p?.platform === undefined
    ) {
      const message = "required (a provider without a platform names where its api is)";
      issues.push({ path: ["providers", i, "base_url"], message });
    }
    if (p?.api_key !== undefined && p?.api_keys !== undefined) {
      issues.push({ path: ["providers", i, "api_keys"], message: "exclusive with api_key" });
    }
  });
  routes.forEach((r, i) => {
    const targets = routeTargets(r, i);
    if (targets === undefined) {
      issues.push({ path: ["routes", i], message: "expected exactly one of provider or targets" });
      return;
    }
    for (const t of targets) {
      if (!byName.has(t.provider)) {
        issues.push({ path: t.path("provider"), message: namesNone("provider", byName.keys()) });
      }
    }
  });
  const catalog = Array.isArray((d as { catalog?: unknown }).catalog)
    ? (d as { catalog: unknown[] }).catalog
    : [];
  const patterns = routes.flatMap((r) => (Array.isArray(r?.models) ? r.models : []))
    .filter((m): m is string => typeof m === "string").map(globToRegExp);
  catalog.forEach((c, i) => {
    const id = (c as { id?: unknown })?.id;
    if (typeof id === "string" && !patterns.some((p) => p.test(id))) {
      issues.push({ path: ["catalog", i, "id"], message: "no route serves this model" });
    }
  });
  return issues;
}

interface RawTarget {
  provider: unknown;
  model: unknown;
  path: (field: string) => PropertyKey[];
}

/** A raw route's targets (the `provider:` shorthand is one), undefined unless exactly one. */
function routeTargets(r: Record<string, unknown> | undefined, i: number): RawTarget[] | undefined {
  const hasProvider = r?.provider !== undefined;
  if (hasProvider === Array.isArray(r?.targets)) return undefined;
  if (hasProvider) {
    return [{ provider: r!.provider, model: r!.model, path: (f) => ["routes", i, f] }];
  }
  return (r!.targets as Record<string, unknown>[]).map((t, j) => ({
    provider: t?.provider,
    model: t?.model ?? r!.model,
    path: (f) => ["routes", i, "targets", j, f],
  }));
}

export type Config = z.infer<typeof configSchema>;
export type ProviderConfig = Config["providers"][number];
export type RouteConfig = Config["routes"][number];
export type CooldownConfig = Config["cooldown"];
export type ResponseStoreConfig = Config["response_store"];
export type MetricsConfig = NonNullable<Config["metrics"]>;

export class ConfigError extends Error {}

/**
 * `${VAR}` is not valid inside YAML flow mappings (`{key: ${KEY}}`, as the docs write it), so
 * references become plain-scalar-safe markers before parsing and are resolved after.
 */
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const MARKER = /\u00ab([A-Za-z_][A-Za-z0-9_]*)\u00bb/g;

/** Replaces env markers in every string of a parsed document; a missing variable is an error. */
function substituteEnv(
  value: unknown,
  env: (name: string) => string | undefined,
  path: PropertyKey[] = [],
): unknown {
  if (typeof value === "string") {
    return value.replace(MARKER, (_, name: string) => {
      const v = env(name);
      if (v === undefined) {
        throw new ConfigError(
          `${formatPath(path) || "config"}: environment variable ${name} is not set`,
        );
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, [...path, i]));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, substituteEnv(v, env, [...path, k])]),
    );
  }
  return value;
}

/**
 * A field whose name ends in `_file` names a file (`key_file`, `api_key_file`, a platform's
 * `credentials_file`): a relative one is read from the config file's folder, wherever the
 * gateway was started.
 */
function resolveFiles(value: unknown, folder: string): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveFiles(v, folder));
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k.endsWith("_file") && typeof v === "string" && v !== "" && !isAbsolute(v)
        ? join(folder, v)
        : resolveFiles(v, folder),
    ]),
  );
}

/**
 * Validates a parsed (already substituted) document; `formats`, when given, also checks each
 * provider's `api` (checkFormats does the rest).
 */
export function validateConfig(doc: unknown, formats?: KnownFormats): Config {
  const result = configSchema.safeParse(doc);
  const issues = [...configIssues(result.error?.issues ?? []), ...crossCheck(doc, formats)];
  if (result.success && issues.length === 0) return result.data;
  throw invalid(issues);
}

function invalid(issues: Issue[]): ConfigError {
  return new ConfigError(issueReport("invalid config", issues));
}

/** A name that is none of `known` (a value is never repeated: only the names it may take). */
export function namesNone(what: string, known: Iterable<unknown>): string {
  const names = [...known].filter((n) => typeof n === "string");
  return `unknown ${what} (${names.length ? `one of ${names.join(", ")}` : `no ${what} is set`})`;
}

/** Why `api` names no format plugin, or undefined. */
function unknownApi(api: string, formats: KnownFormats): string | undefined {
  return formats.ids.includes(api) ? undefined : namesNone("api", formats.ids);
}

/**
 * What only the format plugins can judge: that each provider's api is one of theirs, that a
 * target's model can be sent to its format, and where routes may set `passthrough`.
 */
export function checkFormats(config: Config, formats: KnownFormats): void {
  const issues: Issue[] = [];
  const apiOf = new Map(config.providers.map((p) => [p.name, p.api]));
  const providers = new Map(config.providers.map((p) => [p.name, p]));
  config.providers.forEach((p, i) => {
    const unknown = unknownApi(p.api, formats);
    if (unknown) issues.push({ path: ["providers", i, "api"], message: unknown });
    else if (p.platform !== undefined) {
      const found = formats.platforms?.check(p) ??
        [{ path: ["platform"], message: `unknown platform "${p.platform}" (none is served)` }];
      issues.push(...found.map((f) => ({ ...f, path: ["providers", i, ...f.path] })));
    }
  });
  config.routes.forEach((r, i) => {
    const targets = r.targets ?? [{ provider: r.provider!, model: undefined }];
    targets.forEach((t, j) => {
      const model = t.model ?? r.model;
      const provider = providers.get(t.provider)!;
      const why = model &&
        (provider.platform === undefined
          ? formats.upstream(provider.api)?.unsafeModel?.(model)
          : formats.platforms?.unsafeModel(provider, model));
      const at = r.targets ? ["routes", i, "targets", j] : ["routes", i];
      if (why) issues.push({ path: [...at, "model"], message: why });
    });
    const apis = targets.map((t) => apiOf.get(t.provider)!);
    if (r.passthrough && !apis.some((api) => formats.get(api)?.passthroughRoutes)) {
      const allowed = formats.plugins.filter((p) => p.passthroughRoutes).map((p) => p.id);
      issues.push({
        path: ["routes", i, "passthrough"],
        message: `allowed only on routes with an api: ${allowed.join(" or ")} target (${
          targets.map((t, j) => `"${t.provider}" is api ${knownApi(apis[j], formats)}`).join(", ")
        })`,
      });
    }
  });
  if (issues.length) throw invalid(issues);
}

/** An api as the report may name it: one the formats serve, else not repeated. */
function knownApi(api: string, formats: KnownFormats): string {
  return formats.ids.includes(api) ? api : "unknown";
}

export function parseConfigText(
  text: string,
  env: (name: string) => string | undefined,
  /** The formats served: an unknown `api` is then reported with the other errors. */
  formats?: KnownFormats,
  /** The config file's folder, which relative `*_file` paths start from (default: the cwd). */
  folder?: string,
): Config {
  let doc: unknown;
  try {
    doc = readYaml(text.replace(ENV_REF, "\u00ab$1\u00bb"));
  } catch (e) {
    if (!(e instanceof YamlProblem)) throw e;
    throw new ConfigError(`config is not valid YAML: ${e.message}`);
  }
  const substituted = substituteEnv(doc, env);
  return validateConfig(folder ? resolveFiles(substituted, folder) : substituted, formats);
}

/**
 * The built-in default: client keys from GATEWAY_API_KEYS, a provider and route for each
 * vendor key present, and the local `demo` provider (route `demo-*`) that needs no network.
 * In dev mode with no keys set, `devKey` is used, else one key is generated and reported
 * through `onGeneratedKey` (a reload passes the first one back, so it stays the same).
 */
export function defaultConfig(
  env: (name: string) => string | undefined,
  formats: KnownFormats,
  opts: { dev?: boolean; devKey?: string; onGeneratedKey?: (key: string) => void } = {},
): Config {
  let keys = (env("GATEWAY_API_KEYS") ?? "").split(",").map((k) => k.trim()).filter(Boolean);
  if (keys.length === 0 && opts.dev) {
    let key = opts.devKey;
    if (!key) {
      key = `gw-dev-${crypto.randomUUID().replaceAll("-", "")}`;
      opts.onGeneratedKey?.(key);
    }
    keys = [key];
  }
  if (keys.length === 0) {
    throw new ConfigError(
      "no client keys: set GATEWAY_API_KEYS (comma list), or pass --config, or run `deno task dev` " +
        "(`npx -y deno@2.9.6 task dev` without Deno installed)",
    );
  }
  const vendors = formats.vendors.filter((v) => env(`${v.env}_API_KEY`));
  return validateConfig({
    listen: { hostname: "127.0.0.1", port: 8080 },
    keys: keys.map((key, i) => ({ name: `key-${i + 1}`, key })),
    providers: [
      ...vendors.map((v) => ({
        name: v.name,
        api: v.api,
        base_url: env(`${v.env}_BASE_URL`) ?? v.base_url,
        api_key: env(`${v.env}_API_KEY`),
      })),
      { name: "demo", api: "demo" },
    ],
    routes: [
      ...vendors.map((v) => ({
        models: [...v.models],
        provider: v.name,
        passthrough: v.passthrough === true,
      })),
      { models: ["demo-*"], provider: "demo" },
    ],
    metrics: { hostname: "127.0.0.1", port: 9464 },
  });
}

/**
 * The dev key kept in `path` (created on first use, readable by its owner only), so a key copied
 * from `deno task dev` keeps working across the watcher's restarts and reloads.
 */
export function stableDevKey(path: string): string {
  try {
    const key = Deno.readTextFileSync(path).trim();
    if (key) return key;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const key = `gw-dev-${crypto.randomUUID().replaceAll("-", "")}`;
  Deno.mkdirSync(path.slice(0, path.lastIndexOf("/") + 1) || ".", { recursive: true });
  Deno.writeTextFileSync(path, `${key}\n`, { mode: 0o600 });
  return key;
}

/**
 * Applies PORT / HOST environment overrides to `listen`, METRICS_PORT (a port, or `off`) to
 * `metrics`, and GATEWAY_WORKERS (a number, or `auto`) to `workers`.
 */
export function applyListenEnv(cfg: Config, env: (name: string) => string | undefined): Config {
  const port = env("PORT");
  const host = env("HOST");
  const metricsPort = env("METRICS_PORT");
  if (port !== undefined && !/^\d+$/.test(port)) {
    throw new ConfigError("PORT: expected a number");
  }
  if (
    metricsPort !== undefined && metricsPort !== "off" &&
    !(/^\d+$/.test(metricsPort) && Number(metricsPort) <= 65535)
  ) {
    throw new ConfigError('METRICS_PORT: expected a number or "off"');
  }
  const workersEnv = env("GATEWAY_WORKERS");
  const workers = workersEnv === undefined ? { data: cfg.workers } : workersSchema.safeParse(
    /^\d+$/.test(workersEnv) ? Number(workersEnv) : workersEnv,
  );
  if (!workers.data) {
    throw new ConfigError('GATEWAY_WORKERS: expected a number or "auto"');
  }
  const metrics = metricsPort === undefined
    ? cfg.metrics
    : metricsPort === "off"
    ? undefined
    : configSchema.shape.metrics.unwrap().parse({ ...cfg.metrics, port: Number(metricsPort) });
  return {
    ...cfg,
    listen: {
      hostname: host ?? cfg.listen.hostname,
      port: port !== undefined ? Number(port) : cfg.listen.port,
    },
    metrics,
    workers: workers.data,
  };
}

/** The number of gateway threads `workers` asks for (`auto`: one per core). */
export function workerCount(workers: Config["workers"]): number {
  return workers === "auto" ? navigator.hardwareConcurrency : workers;
}

/** Every provider credential in a config (single keys and pools), for scrubbing. */
export function providerKeys(config: Config): (string | undefined)[] {
  return config.providers.flatMap((p) => [p.api_key, ...(p.api_keys ?? [])]);
}
