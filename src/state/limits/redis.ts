/**
 * Limit windows in Redis (`limits_store.redis_url`, or a Redis Cluster: `redis_cluster`), shared
 * by every instance behind one Kong upstream. Each call is one Lua script, so a check and its
 * count are atomic across instances.
 * Sliding windows are hashes of one-second buckets (field: the second; value: amount and the
 * time of its latest entry), at most 61 each, so a call's work is bounded however busy the
 * window; calendar windows are counters under the day's or month's key, expiring after it ends;
 * the tokens held by requests in flight are a hash of reservations, each lapsing on its own.
 * Sliding windows run on Redis's clock (TIME), which every instance shares.
 */
import type { RedisLink } from "../redis_client.ts";
import { connectRedis } from "../redis_link.ts";
import { type Admitted, type LimitStore, type Reservation, RESERVATION_TTL_MS } from "./store.ts";
import type { Limits, LimitsStoreConfig } from "../../config/limits.ts";
import {
  day,
  LIMIT_NAMES,
  MINUTE_MS,
  month,
  reached,
  type Windows,
  withReserved,
} from "./windows.ts";

/**
 * KEYS: requests buckets, tokens buckets, day counter, month counter, reservations.
 * ARGV: now in ms ("": Redis's clock), window ms, mode (admit | reserve | record | read), limits
 * (4, 0 = none), tokens, spend, day ttl s, month ttl s, a reservation's id ("": none: reserved
 * by `reserve`, let go by `record`), its tokens, its request's admission time, its ttl ms.
 * Returns: 1 if a limit has been reached (nothing counted; `reserve` takes back the request
 * admitted then), then used and reset of the requests and the tokens window, the day's tokens,
 * the month's spend (text: Lua would truncate it), the tokens reserved in flight, and now.
 */
const SCRIPT = `
local now, win, mode = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local lim = {tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])}
-- A sliding window's buckets still in it, oldest first, and their sum; the rest is deleted.
local function load(i)
  local raw, buckets, sum, gone = redis.call('HGETALL', KEYS[i]), {}, 0, {}
  for j = 1, #raw, 2 do
    local n, at = string.match(raw[j + 1], '^(%d+):(%d+)$')
    n, at = tonumber(n), tonumber(at)
    if at <= now - win then gone[#gone + 1] = raw[j]
    else buckets[#buckets + 1] = {at, n, raw[j]}; sum = sum + n end
  end
  if #gone > 0 then redis.call('HDEL', KEYS[i], unpack(gone)) end
  table.sort(buckets, function(a, b) return a[1] < b[1] end)
  return buckets, sum
end
-- Counts n in the bucket of this second; the new sum.
local function add(i, buckets, sum, n)
  local field = string.format('%d', math.floor(now / 1000))
  local last = buckets[#buckets]
  if last and last[3] == field then last[1], last[2] = now, last[2] + n
  else last = {now, n, field}; buckets[#buckets + 1] = last end
  redis.call('HSET', KEYS[i], field, string.format('%d:%d', last[2], now))
  redis.call('PEXPIRE', KEYS[i], win + 1000)
  return sum + n
end
-- Used, and when it frees: enough of the oldest gone to be under the limit (walked only when
-- it is not: else the oldest); empty, now.
local function state(buckets, sum, limit)
  local left = sum
  for j = 1, #buckets do
    left = left - buckets[j][2]
    if limit == 0 or left < limit then return sum, buckets[j][1] + win end
  end
  return sum, now
end
local function used(i) return tonumber(redis.call('GET', KEYS[i]) or '0') end
-- The tokens reserved by requests in flight (field: id; value: tokens and when it lapses, so
-- an instance that died holding some frees them); lapsed ones are deleted.
local function reserved()
  if lim[2] == 0 and lim[3] == 0 then return 0 end
  local raw, sum, gone = redis.call('HGETALL', KEYS[5]), 0, {}
  for j = 1, #raw, 2 do
    local n, til = string.match(raw[j + 1], '^(%d+):(%d+)$')
    if tonumber(til) <= now then gone[#gone + 1] = raw[j] else sum = sum + tonumber(n) end
  end
  if #gone > 0 then redis.call('HDEL', KEYS[5], unpack(gone)) end
  return sum
end
-- Takes back one request counted at ARGV[14] (ms), if its bucket is still there.
local function uncount()
  local field = string.format('%d', math.floor(tonumber(ARGV[14]) / 1000))
  local bucket = redis.call('HGET', KEYS[1], field)
  if not bucket then return end
  local n, at = string.match(bucket, '^(%d+):(%d+)$')
  if tonumber(n) > 1 then redis.call('HSET', KEYS[1], field, (tonumber(n) - 1) .. ':' .. at)
  else redis.call('HDEL', KEYS[1], field) end
end
if mode == 'record' and ARGV[12] ~= '' then redis.call('HDEL', KEYS[5], ARGV[12]) end
local rb, rs = load(1)
local tb, ts = load(2)
local rsv = reserved()
local refused = 0
if mode == 'admit' then
  local counts = {rs, ts + rsv, used(3) + rsv, used(4)}
  for i = 1, 4 do
    if lim[i] > 0 and counts[i] >= lim[i] then refused = 1 end
  end
  if refused == 0 and lim[1] > 0 then rs = add(1, rb, rs, 1) end
elseif mode == 'reserve' then
  if (lim[2] > 0 and ts + rsv >= lim[2]) or (lim[3] > 0 and used(3) + rsv >= lim[3]) then
    refused = 1
    if lim[1] > 0 then
      uncount()
      rb, rs = load(1)
    end
  else
    local ttl = tonumber(ARGV[15])
    redis.call('HSET', KEYS[5], ARGV[12], string.format('%d:%d', tonumber(ARGV[13]), now + ttl))
    redis.call('PEXPIRE', KEYS[5], ttl)
    rsv = rsv + tonumber(ARGV[13])
  end
elseif mode == 'record' then
  local tokens = tonumber(ARGV[8])
  if tokens > 0 then
    if lim[2] > 0 then ts = add(2, tb, ts, tokens) end
    redis.call('INCRBY', KEYS[3], tokens)
    redis.call('EXPIRE', KEYS[3], ARGV[10])
  end
  if tonumber(ARGV[9]) > 0 then
    redis.call('INCRBYFLOAT', KEYS[4], ARGV[9])
    redis.call('EXPIRE', KEYS[4], ARGV[11])
  end
end
local ru, rr = state(rb, rs, lim[1])
local tu, tr = state(tb, ts, lim[2])
return {refused, ru, rr, tu, tr, used(3), redis.call('GET', KEYS[4]) or '0', rsv, now}
`;

type Reply = [number, number, number, number, number, number, string, number, number];

export class RedisLimitStore implements LimitStore {
  readonly name = "redis";

  private constructor(
    private readonly link: RedisLink,
    private readonly cfg: LimitsStoreConfig,
    private readonly slidingMs: number,
    private readonly clock: "redis" | "caller",
  ) {}

  /**
   * Starts connecting; the gateway starts even if Redis is down. Tests may shorten the sliding
   * windows and run them on the `now` they pass (`clock: "caller"`) rather than Redis's clock.
   */
  static connect(
    cfg: LimitsStoreConfig,
    onError: (e: unknown) => void,
    slidingMs = MINUTE_MS,
    clock: "redis" | "caller" = "redis",
  ) {
    return new RedisLimitStore(connectRedis(cfg, onError), cfg, slidingMs, clock);
  }

  async admit(identity: string, limits: Limits, now: number): Promise<Admitted> {
    const { refused, windows, at } = await this.run("admit", identity, limits, now);
    return refused ? { refused: reached(limits, windows), windows, at } : { windows, at };
  }

  async reserve(identity: string, limits: Limits, r: Reservation, now: number) {
    const { refused, windows, at } = await this.run("reserve", identity, limits, now, {
      reservation: r,
    });
    const tokens = {
      tokens_per_minute: limits.tokens_per_minute,
      tokens_per_day: limits.tokens_per_day,
    };
    return refused ? { refused: reached(tokens, windows), windows, at } : { windows, at };
  }

  async record(
    identity: string,
    limits: Limits,
    tokens: number,
    spend: number,
    now: number,
    release?: Reservation,
  ) {
    const ran = await this.run("record", identity, limits, now, {
      tokens,
      spend,
      reservation: release,
    });
    return ran.windows;
  }

  async read(identity: string, limits: Limits, now: number): Promise<Windows> {
    return (await this.run("read", identity, limits, now)).windows;
  }

  /** `now` picks the calendar windows (and, with the caller's clock, times the sliding ones). */
  private async run(
    mode: string,
    identity: string,
    limits: Limits,
    now: number,
    { tokens = 0, spend = 0, reservation }: {
      tokens?: number;
      spend?: number;
      reservation?: Reservation;
    } = {},
  ): Promise<{ refused: number; windows: Windows; at: number }> {
    if (!this.link.isReady) throw new Error("not connected to Redis");
    const d = day(now);
    const m = month(now);
    // One hash tag per identity: the script's five keys share a slot, as Redis Cluster needs
    // (an identity's keys live on one node; identities spread over the cluster).
    const base = `${this.cfg.redis_prefix}{${identity}}`;
    const keys = [
      `${base}:rqs`,
      `${base}:tks`,
      `${base}:d:${d.key}`,
      `${base}:m:${m.key}`,
      `${base}:rsv`,
    ];
    const args = [
      this.clock === "caller" ? now : "",
      this.slidingMs,
      mode,
      ...LIMIT_NAMES.map((n) => limits[n] ?? 0),
      tokens,
      spend,
      Math.ceil((d.end - now) / 1000) + 60,
      Math.ceil((m.end - now) / 1000) + 60,
      reservation?.id ?? "",
      reservation?.tokens ?? 0,
      reservation?.admittedAt ?? 0,
      RESERVATION_TTL_MS,
    ].map(String);
    const reply = await this.link.eval(SCRIPT, keys, args, this.cfg.timeout_ms) as Reply;
    const [refused, requests, requestsReset, tokensUsed, tokensReset, used, spent, rsv, at] = reply;
    const tokensWindow = { used: tokensUsed, reset: tokensReset };
    const dayWindow = { used, reset: d.end };
    return {
      refused,
      at,
      windows: {
        requests_per_minute: { used: requests, reset: requestsReset },
        tokens_per_minute: withReserved(tokensWindow, rsv, limits.tokens_per_minute, at),
        tokens_per_day: withReserved(dayWindow, rsv, limits.tokens_per_day, at),
        spend_per_month_usd: { used: Number(spent), reset: m.end },
      },
    };
  }

  close(): Promise<void> {
    return this.link.close();
  }
}
