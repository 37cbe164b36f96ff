/**
 * What the gateway remembers of its providers between requests: smooth weighted round-robin
 * counters, target cooldowns and key cooldowns. Per gateway process; a reload keeps it.
 *
 * A request that names its session (src/request/session.ts) is not balanced but placed: among the
 * healthy targets of a priority, and among a pool's keys not cooling, it takes the one its
 * session ranks first (rendezvous hashing, weighted), so a session keeps one provider account
 * and its prompt cache while that account is healthy, every instance choosing alike; when the
 * account cools, only its own sessions move.
 */
import type { CooldownConfig, ProviderConfig } from "../config/config.ts";

/** A provider key of a pool, named (never by value) as `<provider>#<index>`. */
export interface PoolKey {
  value: string;
  name: string;
  index: number;
}

/** What balancing reads of a route's target (src/request/router.ts's `Target`). */
interface Weighted {
  /** Identifies the target in balancing state. */
  id: string;
  provider: { name: string };
  weight: number;
  priority: number;
}

interface Cooling {
  failures: number;
  until: number;
}

/**
 * A number in (0, 1) drawn from a session and a target or key id, the same on every instance
 * (cyrb53, a 53-bit string hash: well spread, and cheap on the short strings it takes).
 */
function draw(session: string, id: string): number {
  const text = `${session}\u0000${id}`;
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0) + 1) / (2 ** 53 + 1);
}

/** The session's rank of `id` (weighted rendezvous hashing: highest first). */
const rank = (session: string, id: string, weight = 1) => -weight / Math.log(draw(session, id));

export class Health {
  /** Smooth weighted round-robin: each target's current weight. */
  private readonly current = new Map<string, number>();
  /** By provider name: a provider that fails is down for every route that sends to it. */
  private readonly targets = new Map<string, Cooling>();
  private readonly keys = new Map<string, { next: number; until: number[] }>();

  constructor(private readonly now: () => number = Date.now) {}

  private cooling(provider: string): boolean {
    return (this.targets.get(provider)?.until ?? 0) > this.now();
  }

  /**
   * The order a request tries its route's targets in: by priority; within a priority the
   * weighted round-robin pick (or the session's) first, the others after it; cooling targets
   * last of all.
   */
  plan<T extends Weighted>(targets: readonly T[], session?: string): readonly T[] {
    // The common route of one target: nothing to order.
    if (targets.length === 1) return targets;
    const healthy: T[] = [];
    const cooling: T[] = [];
    for (const t of targets) (this.cooling(t.provider.name) ? cooling : healthy).push(t);
    const order: T[] = [];
    for (let i = 0; i < healthy.length;) {
      let j = i;
      while (j < healthy.length && healthy[j].priority === healthy[i].priority) j++;
      order.push(...this.balance(healthy.slice(i, j), session));
      i = j;
    }
    return [...order, ...cooling];
  }

  /**
   * One smooth weighted round-robin step over a priority group (or the session's pick): the
   * pick, then the rest.
   */
  private balance<T extends Weighted>(group: T[], session?: string): T[] {
    if (group.length === 1) return group;
    if (session !== undefined) {
      const ranked = group.map((t) => rank(session, t.id, t.weight));
      const best = group[ranked.indexOf(Math.max(...ranked))];
      return [best, ...group.filter((t) => t !== best)];
    }
    let total = 0;
    let best = group[0];
    for (const t of group) {
      const w = (this.current.get(t.id) ?? 0) + t.weight;
      this.current.set(t.id, w);
      total += t.weight;
      if (w > this.current.get(best.id)!) best = t;
    }
    this.current.set(best.id, this.current.get(best.id)! - total);
    return [best, ...group.filter((t) => t !== best)];
  }

  succeeded(provider: string): void {
    this.targets.delete(provider);
  }

  /** A failure: cooled after `failures` in a row, or for the provider's retry-after. */
  failed(provider: string, cooldown: CooldownConfig, retryAfterMs?: number): void {
    const c = this.targets.get(provider) ?? { failures: 0, until: 0 };
    c.failures++;
    const now = this.now();
    if (c.failures >= cooldown.failures) c.until = Math.max(c.until, now + cooldown.seconds * 1000);
    if (retryAfterMs !== undefined) c.until = Math.max(c.until, now + retryAfterMs);
    this.targets.set(provider, c);
  }

  /**
   * The provider's next healthy key, round-robin, or the session's among the healthy ones
   * (undefined: it has none).
   */
  key(provider: ProviderConfig, session?: string): PoolKey | undefined {
    const pool = provider.api_keys ?? (provider.api_key ? [provider.api_key] : []);
    if (pool.length === 0) return undefined;
    // A pool that changed size (a reload) starts its rotation afresh.
    const known = this.keys.get(provider.name);
    const s = known?.until.length === pool.length ? known : { next: 0, until: pool.map(() => 0) };
    this.keys.set(provider.name, s);
    const now = this.now();
    const placed = session === undefined ? -1 : this.placed(provider.name, s.until, now, session);
    if (placed >= 0) {
      return { value: pool[placed], name: `${provider.name}#${placed}`, index: placed };
    }
    let index = s.next % pool.length;
    for (let k = 0; k < pool.length; k++) {
      const i = (s.next + k) % pool.length;
      if (s.until[i] <= now) {
        index = i;
        break;
      }
    }
    s.next = index + 1;
    return { value: pool[index], name: `${provider.name}#${index}`, index };
  }

  /** The index of the healthy key the session ranks first, or -1 when every key is cooling. */
  private placed(provider: string, until: number[], now: number, session: string): number {
    let best = -1;
    let top = -Infinity;
    until.forEach((u, i) => {
      const r = u <= now ? rank(session, `${provider}#${i}`) : -Infinity;
      if (r > top) [best, top] = [i, r];
    });
    return best;
  }

  /** A key the provider refused (401/403) or rate-limited: out of rotation for a while. */
  coolKey(provider: ProviderConfig, key: PoolKey, ms: number): void {
    const s = this.keys.get(provider.name);
    if (s) s.until[key.index] = this.now() + ms;
  }

  /** Whether the provider has a pool key other than `key` that is not cooling. */
  hasOtherKey(provider: ProviderConfig, key: PoolKey): boolean {
    const s = this.keys.get(provider.name);
    const now = this.now();
    return !!s && s.until.some((until, i) => i !== key.index && until <= now);
  }
}
