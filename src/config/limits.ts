/** The config of identities, budgets and rate limits (docs/limits.md). */
import { z } from "zod";
import { ONE_REDIS, oneRedis, redisClusterSchema, redisUrlSchema } from "./redis_url.ts";

/** What sets a Kong consumer's identity name apart; key names may not begin with it. */
export const CONSUMER_PREFIX = "consumer:";

/** An identity's limits; an absent one is unlimited. */
const limitsSchema = z.strictObject({
  /** Requests in any 60 seconds (sliding). */
  requests_per_minute: z.number().int().positive().optional(),
  /** Input + output tokens in any 60 seconds (sliding). */
  tokens_per_minute: z.number().int().positive().optional(),
  /** Input + output tokens per calendar day, UTC. */
  tokens_per_day: z.number().int().positive().optional(),
  /** USD per calendar month, UTC, from `prices`. */
  spend_per_month_usd: z.number().positive().optional(),
});

export type Limits = z.infer<typeof limitsSchema>;

/** What a client key entry may add: its limits, and whether it may read everyone's usage. */
export const keyLimitFields = {
  limits: limitsSchema.optional(),
  admin: z.boolean().optional(),
};

/** Identities Kong authenticated (`identities.kong_consumers`). */
export const consumersSchema = z.strictObject({
  default_limits: limitsSchema.optional(),
  by_name: z.record(z.string().min(1), z.strictObject({ limits: limitsSchema })).default({}),
});

export const identitiesSchema = z.strictObject({
  /** Trust Kong's X-Consumer-* headers from `trusted_proxies`. */
  kong_consumers: z.boolean().default(false),
});

const usd = z.number().min(0);

/** USD per million tokens for models matching `models` (globs); the first match wins. */
export const priceSchema = z.strictObject({
  models: z.array(z.string().min(1)).min(1),
  input: usd,
  output: usd,
  /** Cache reads (default: `input`). */
  cache_read: usd.optional(),
  /** Cache writes (default: `input`). */
  cache_write: usd.optional(),
});

type Price = z.infer<typeof priceSchema>;

export const limitsStoreSchema = z.strictObject({
  /** Count in Redis, shared by every instance; absent: in memory (one instance). */
  redis_url: redisUrlSchema.optional(),
  /** Count in a Redis Cluster instead: its seed nodes (docs/scaling.md). */
  redis_cluster: redisClusterSchema.optional(),
  redis_prefix: z.string().min(1).default("gateway:limits:"),
  /** Longest wait for one Redis command before it counts as unreachable. */
  timeout_ms: z.number().int().positive().default(250),
  /** While the store is unreachable: `allow` requests (logged, counted) or `deny` with a 503. */
  on_error: z.enum(["allow", "deny"]).default("allow"),
}).refine(oneRedis, { message: ONE_REDIS, path: ["redis_cluster"] });

export type LimitsStoreConfig = z.infer<typeof limitsStoreSchema>;

/** What the limit policy reads of a config (src/state/limits/policy.ts). */
export interface PolicyConfig {
  keys: readonly { name: string; limits?: Limits; admin?: boolean }[];
  consumers: z.infer<typeof consumersSchema>;
  prices: readonly Price[];
}
