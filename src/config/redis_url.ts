/** The `redis_url` config field, shared by the response store and the limits store. */
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
