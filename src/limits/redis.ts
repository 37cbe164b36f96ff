/**
 * Limit windows in Redis (`limits_store.redis_url`), shared by every instance behind one Kong
 * upstream. Each call is one Lua script, so a check and its count are atomic across instances.
 * Sliding windows are sorted sets (score: time; member: amount and a unique suffix); calendar
 * windows are counters under the day's or month's key, expiring after it ends.
 */
import { createClient } from "redis";
import { type Admitted, limitsStoreUnavailable, type LimitStore } from "./store.ts";
import type { Limits, LimitsStoreConfig } from "./schema.ts";
import {
  day,
  type Entry,
  LIMIT_NAMES,
  MINUTE_MS,
  month,
  sliding,
  type Windows,
} from "./windows.ts";

/** Longest wait between reconnect attempts while Redis is down. */
const RETRY_MAX_MS = 1000;

/**
 * KEYS: requests zset, tokens zset, day counter, month counter.
 * ARGV: now, window ms, mode (admit | record | read), limits (4, 0 = none), tokens, spend,
 * unique member suffix, day ttl s, month ttl s.
 * Returns: refused limit index (0 = none), requests entries, tokens entries, day, month.
 */
const SCRIPT = `
local now, win, mode = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local lim = {tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])}
for i = 1, 2 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - win) end
local function used(i)
  if i <= 2 then
    local n = 0
    for _, m in ipairs(redis.call('ZRANGE', KEYS[i], 0, -1)) do n = n + tonumber(string.match(m, '^[^:]+')) end
    return n
  end
  return tonumber(redis.call('GET', KEYS[i]) or '0')
end
local refused = 0
if mode == 'admit' then
  for i = 1, 4 do
    if refused == 0 and lim[i] > 0 and used(i) >= lim[i] then refused = i end
  end
  if refused == 0 then
    redis.call('ZADD', KEYS[1], now, '1:' .. ARGV[10])
    redis.call('PEXPIRE', KEYS[1], win)
  end
elseif mode == 'record' then
  local tokens, spend = tonumber(ARGV[8]), tonumber(ARGV[9])
  if tokens > 0 then
    redis.call('ZADD', KEYS[2], now, tokens .. ':' .. ARGV[10])
    redis.call('PEXPIRE', KEYS[2], win)
    redis.call('INCRBY', KEYS[3], tokens)
    redis.call('EXPIRE', KEYS[3], ARGV[11])
  end
  if spend > 0 then
    redis.call('INCRBYFLOAT', KEYS[4], ARGV[9])
    redis.call('EXPIRE', KEYS[4], ARGV[12])
  end
end
return {refused, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'),
  redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES'),
  redis.call('GET', KEYS[3]) or '0', redis.call('GET', KEYS[4]) or '0'}
`;

type Client = ReturnType<typeof createClient>;
type Reply = [number, string[], string[], string, string];

/** A sorted set's `member, score` pairs as entries (the member starts with the amount). */
function entries(pairs: string[]): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i < pairs.length; i += 2) {
    out.push({ n: Number(pairs[i].slice(0, pairs[i].indexOf(":"))), at: Number(pairs[i + 1]) });
  }
  return out;
}

export class RedisLimitStore implements LimitStore {
  readonly name = "redis";
  private sequence = 0;
  private readonly instance = crypto.randomUUID().slice(0, 8);

  private constructor(
    private readonly client: Client,
    private readonly cfg: LimitsStoreConfig,
    private readonly slidingMs: number,
  ) {}

  /** Starts connecting; the gateway starts even if Redis is down. */
  static connect(cfg: LimitsStoreConfig, onError: (e: unknown) => void, slidingMs = MINUTE_MS) {
    const client = createClient({
      url: cfg.redis_url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: 2000,
        reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, RETRY_MAX_MS),
      },
    });
    client.on("error", onError);
    client.connect().catch(onError);
    return new RedisLimitStore(client, cfg, slidingMs);
  }

  async admit(identity: string, limits: Limits, now: number): Promise<Admitted> {
    const [refused, windows] = await this.run("admit", identity, limits, now, 0, 0);
    return { refused: refused ? LIMIT_NAMES[refused - 1] : undefined, windows };
  }

  async record(identity: string, limits: Limits, tokens: number, spend: number, now: number) {
    return (await this.run("record", identity, limits, now, tokens, spend))[1];
  }

  async read(identity: string, limits: Limits, now: number): Promise<Windows> {
    return (await this.run("read", identity, limits, now, 0, 0))[1];
  }

  private async run(
    mode: string,
    identity: string,
    limits: Limits,
    now: number,
    tokens: number,
    spend: number,
  ): Promise<[number, Windows]> {
    if (!this.client.isReady) throw limitsStoreUnavailable(this.name);
    const d = day(now);
    const m = month(now);
    const base = this.cfg.redis_prefix + identity;
    const keys = [`${base}:rq`, `${base}:tk`, `${base}:d:${d.key}`, `${base}:m:${m.key}`];
    const args = [
      now,
      this.slidingMs,
      mode,
      ...LIMIT_NAMES.map((n) => limits[n] ?? 0),
      tokens,
      spend,
      `${this.instance}.${++this.sequence}`,
      Math.ceil((d.end - now) / 1000) + 60,
      Math.ceil((m.end - now) / 1000) + 60,
    ].map(String);
    const reply = await this.withTimeout(
      this.client.eval(SCRIPT, { keys, arguments: args }) as Promise<Reply>,
    );
    const [refused, rq, tk, used, spent] = reply;
    return [refused, {
      requests_per_minute: sliding(entries(rq), limits.requests_per_minute, now, this.slidingMs),
      tokens_per_minute: sliding(entries(tk), limits.tokens_per_minute, now, this.slidingMs),
      tokens_per_day: { used: Number(used), reset: d.end },
      spend_per_month_usd: { used: Number(spent), reset: m.end },
    }];
  }

  /** A command that does not answer in `timeout_ms` counts as the store being unreachable. */
  private async withTimeout<T>(command: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(limitsStoreUnavailable(this.name)), this.cfg.timeout_ms);
    });
    command.catch(() => {}); // a late failure after the timeout is already answered
    try {
      return await Promise.race([command, late]);
    } catch (e) {
      throw e instanceof Error && e.message.startsWith("the limits store")
        ? e
        : limitsStoreUnavailable(this.name);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the connection; while reconnecting, also waits out the client's retry sleep. */
  async close(): Promise<void> {
    let retrying: Promise<void> | undefined;
    if (this.client.isOpen && !this.client.isReady) {
      retrying = new Promise((resolve) => {
        const timer = setTimeout(resolve, RETRY_MAX_MS + 100);
        this.client.once("reconnecting", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    try {
      this.client.destroy();
    } catch {
      // already closed
    }
    await retrying;
  }
}
