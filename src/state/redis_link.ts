/** The Redis a store's config names: one server (`redis_url`) or a cluster (`redis_cluster`). */
import { type RedisLink, ServerLink } from "./redis_client.ts";
import { ClusterLink } from "./redis_cluster.ts";
import type { RedisTarget } from "../config/redis_url.ts";

/** Starts connecting; errors (and the first connection's failure) go to `onError`. */
export function connectRedis(target: RedisTarget, onError: (e: unknown) => void): RedisLink {
  if (target.redis_cluster) return new ClusterLink(target.redis_cluster, onError);
  return new ServerLink(target.redis_url, onError);
}
