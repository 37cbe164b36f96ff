/**
 * What the gateway remembers of its providers between requests: smooth weighted round-robin
 * counters, target cooldowns and key cooldowns. Per gateway process; a reload keeps it.
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
   * weighted round-robin pick first, the others after it; cooling targets last of all.
   */
  plan<T extends Weighted>(targets: readonly T[]): readonly T[] {
    // The common route of one target: nothing to order.
    if (targets.length === 1) return targets;
    const healthy: T[] = [];
    const cooling: T[] = [];
    for (const t of targets) (this.cooling(t.provider.name) ? cooling : healthy).push(t);
    const order: T[] = [];
    for (let i = 0; i < healthy.length;) {
      let j = i;
      while (j < healthy.length && healthy[j].priority === healthy[i].priority) j++;
      order.push(...this.balance(healthy.slice(i, j)));
      i = j;
    }
    return [...order, ...cooling];
  }

  /** One smooth weighted round-robin step over a priority group: the pick, then the rest. */
  private balance<T extends Weighted>(group: T[]): T[] {
    if (group.length === 1) return group;
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

  /** The provider's next healthy key, round-robin (undefined: it has none). */
  key(provider: ProviderConfig): PoolKey | undefined {
    const pool = provider.api_keys ?? (provider.api_key ? [provider.api_key] : []);
    if (pool.length === 0) return undefined;
    // A pool that changed size (a reload) starts its rotation afresh.
    const known = this.keys.get(provider.name);
    const s = known?.until.length === pool.length ? known : { next: 0, until: pool.map(() => 0) };
    this.keys.set(provider.name, s);
    const now = this.now();
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
