/**
 * Limit windows in Redis (`limits_store.redis_url`), shared by every instance behind one Kong
 * upstream. Each call is one Lua script, so a check and its count are atomic across instances.
 * Sliding windows are sorted sets (score: time; member: amount and a unique suffix) with a
 * running sum beside each, so a check reads no more than the oldest entry unless the limit is
 * reached; calendar windows are counters under the day's or month's key, expiring after it ends.
 */
import { closeRedis, connectRedis, type RedisClient, withDeadline } from "../redis_client.ts";
import type { Admitted, LimitStore } from "./store.ts";
import type { Limits, LimitsStoreConfig } from "./schema.ts";
import { day, LIMIT_NAMES, MINUTE_MS, month, type Windows } from "./windows.ts";

/**
 * KEYS: requests zset, tokens zset, their running sums, day counter, month counter.
 * ARGV: now, window ms, mode (admit | record | read), limits (4, 0 = none), tokens, spend,
 * unique member suffix, day ttl s, month ttl s.
 * Returns: refused limit index (0 = none), then used and reset of the requests and the tokens
 * window, the day's tokens, the month's spend (text: Lua would truncate it to an integer).
 */
const SCRIPT = `
local now, win, mode = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local lim = {tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])}
local function amount(member) return tonumber(string.match(member, '^[^:]+')) end
for i = 1, 2 do
  local old = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', now - win)
  if #old > 0 then
    local n = 0
    for _, m in ipairs(old) do n = n + amount(m) end
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - win)
    redis.call('DECRBY', KEYS[i + 2], n)
  end
end
-- Used, and when it frees: enough of the oldest gone to be under the limit (else the oldest).
local function sliding(i)
  local used = tonumber(redis.call('GET', KEYS[i + 2]) or '0')
  local full = lim[i] > 0 and used >= lim[i]
  local walk = redis.call('ZRANGE', KEYS[i], 0, full and -1 or 0, 'WITHSCORES')
  local left = used
  for j = 1, #walk, 2 do
    left = left - amount(walk[j])
    if not full or left < lim[i] then return used, tonumber(walk[j + 1]) + win end
  end
  return used, now
end
local function add(i, n)
  redis.call('ZADD', KEYS[i], now, n .. ':' .. ARGV[10])
  redis.call('INCRBY', KEYS[i + 2], n)
  redis.call('PEXPIRE', KEYS[i], win)
  redis.call('PEXPIRE', KEYS[i + 2], win)
end
local function used(i) return tonumber(redis.call('GET', KEYS[i]) or '0') end
local refused = 0
if mode == 'admit' then
  local counts = {(sliding(1)), (sliding(2)), used(5), used(6)}
  for i = 1, 4 do
    if refused == 0 and lim[i] > 0 and counts[i] >= lim[i] then refused = i end
  end
  if refused == 0 then add(1, 1) end
elseif mode == 'record' then
  local tokens = tonumber(ARGV[8])
  if tokens > 0 then
    add(2, tokens)
    redis.call('INCRBY', KEYS[5], tokens)
    redis.call('EXPIRE', KEYS[5], ARGV[11])
  end
  if tonumber(ARGV[9]) > 0 then
    redis.call('INCRBYFLOAT', KEYS[6], ARGV[9])
    redis.call('EXPIRE', KEYS[6], ARGV[12])
  end
end
local ru, rr = sliding(1)
local tu, tr = sliding(2)
return {refused, ru, rr, tu, tr, used(5), redis.call('GET', KEYS[6]) or '0'}
`;

type Reply = [number, number, number, number, number, number, string];

export class RedisLimitStore implements LimitStore {
  readonly name = "redis";
  private sequence = 0;
  private readonly instance = crypto.randomUUID().slice(0, 8);

  private constructor(
    private readonly client: RedisClient,
    private readonly cfg: LimitsStoreConfig,
    private readonly slidingMs: number,
  ) {}

  /** Starts connecting; the gateway starts even if Redis is down. */
  static connect(cfg: LimitsStoreConfig, onError: (e: unknown) => void, slidingMs = MINUTE_MS) {
    return new RedisLimitStore(connectRedis(cfg.redis_url, onError), cfg, slidingMs);
  }

  async admit(identity: string, limits: Limits, now: number): Promise<Admitted> {
    const [refused, windows] = await this.run("admit", identity, limits, now, 0, 0);
    return refused ? { refused: LIMIT_NAMES[refused - 1], windows } : { windows };
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
    if (!this.client.isReady) throw new Error("not connected to Redis");
    const d = day(now);
    const m = month(now);
    const base = this.cfg.redis_prefix + identity;
    const keys = [
      `${base}:rq`,
      `${base}:tk`,
      `${base}:rq:sum`,
      `${base}:tk:sum`,
      `${base}:d:${d.key}`,
      `${base}:m:${m.key}`,
    ];
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
    const reply = await withDeadline(
      this.client.eval(SCRIPT, { keys, arguments: args }) as Promise<Reply>,
      this.cfg.timeout_ms,
    );
    const [refused, requests, requestsReset, tokensUsed, tokensReset, used, spent] = reply;
    return [refused, {
      requests_per_minute: { used: requests, reset: requestsReset },
      tokens_per_minute: { used: tokensUsed, reset: tokensReset },
      tokens_per_day: { used, reset: d.end },
      spend_per_month_usd: { used: Number(spent), reset: m.end },
    }];
  }

  close(): Promise<void> {
    return closeRedis(this.client);
  }
}
