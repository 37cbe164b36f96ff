/**
 * The `redis_url` and `redis_cluster` config fields, shared by the response store and the limits
 * store: one Redis, or the seed nodes of a Redis Cluster.
 */
import { z } from "zod";

/**
 * Whether the Redis client can read `url` (it decodes the user and password, and takes the path
 * as a database number): else it throws at startup, its message quoting the URL.
 */
function usableRedisUrl(url: string): boolean {
  try {
    const { username, password, pathname } = new URL(url);
    decodeURIComponent(username);
    decodeURIComponent(password);
    return /^\/?(\d+)?$/.test(pathname);
  } catch {
    return false; // not a URL (reported as such too), or a malformed % escape
  }
}

/** A Redis URL the client can connect with; a refusal names the field, never the value. */
export const redisUrlSchema = z.url({ protocol: /^rediss?$/ }).refine(
  usableRedisUrl,
  "expected redis[s]://[user:password@]host[:port][/database number], with valid % escapes",
);

/**
 * A Redis Cluster's seed nodes (any few of its nodes: the rest is discovered), each as a URL;
 * credentials and TLS (`rediss`) are the first one's for every node. A cluster has database 0
 * only.
 */
export const redisClusterSchema = z.array(
  redisUrlSchema.refine(
    (url) => /^\/?0?$/.test(new URL(url).pathname),
    "a Redis Cluster has database 0 only: no /database in its node URLs",
  ),
).min(1);

/** Where a store's Redis is: one server, or a cluster's seed nodes. */
export interface RedisTarget {
  redis_url?: string;
  redis_cluster?: string[];
}

/** A store's Redis fields: one of them, if any. */
export function oneRedis(cfg: RedisTarget): boolean {
  return !(cfg.redis_url && cfg.redis_cluster);
}

export const ONE_REDIS = "give redis_url (one Redis) or redis_cluster (its nodes), not both";

/** Whether the store keeps its data in Redis (one or a cluster) rather than in memory. */
export const inRedis = (cfg: RedisTarget): boolean => !!(cfg.redis_url || cfg.redis_cluster);
