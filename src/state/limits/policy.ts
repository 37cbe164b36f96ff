/**
 * Who is limited how, from one config snapshot: each identity's limits (a client key's name or
 * a Kong consumer's), who may read everyone's usage, and what a model's tokens cost.
 */
import { globToRegExp } from "../../config/glob.ts";
import { CONSUMER_PREFIX, type Limits, type PolicyConfig } from "../../config/limits.ts";

/** Who a request is, for limits, metrics and the access log. */
export interface Identity {
  /**
   * A client key's configured name, or `consumer:` and a Kong consumer's username (else its id):
   * the prefix keeps consumers apart from keys in stored-response ownership and counters.
   */
  name: string;
  /** Absent: unlimited. */
  limits?: Limits;
  admin: boolean;
  /** Authenticated by Kong, not by a gateway key. */
  consumer: boolean;
}

/** Token usage as the IR reports it (ir.Usage): input includes the cache parts. */
interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/** A Kong consumer as its headers name it. */
export interface Consumer {
  username?: string;
  id?: string;
}

const hasAny = (limits: Limits | undefined) =>
  limits !== undefined && Object.values(limits).some((v) => v !== undefined);

export class LimitPolicy {
  private readonly keys = new Map<string, Identity>();
  private readonly prices: { patterns: RegExp[]; price: PolicyConfig["prices"][number] }[];

  constructor(private readonly config: PolicyConfig) {
    // A name shared by several entries (a key file, a rotation) takes the first one's limits.
    for (const k of config.keys) {
      if (this.keys.has(k.name)) continue;
      const limits = hasAny(k.limits) ? k.limits : undefined;
      this.keys.set(k.name, { name: k.name, limits, admin: k.admin === true, consumer: false });
    }
    this.prices = config.prices.map((price) => ({
      patterns: price.models.map(globToRegExp),
      price,
    }));
  }

  /** Whether any model has a price (else spend is never computed). */
  get priced(): boolean {
    return this.prices.length > 0;
  }

  /** The identity of a client key by name. */
  key(name: string): Identity {
    return this.keys.get(name) ?? { name, admin: false, consumer: false };
  }

  /** A Kong consumer: limits by username, else id, else the consumers' default. */
  consumer(c: Consumer): Identity {
    const { by_name, default_limits } = this.config.consumers;
    const own =
      (c.username !== undefined && Object.hasOwn(by_name, c.username)
        ? by_name[c.username]
        : c.id !== undefined && Object.hasOwn(by_name, c.id)
        ? by_name[c.id]
        : undefined)?.limits ?? default_limits;
    return {
      name: CONSUMER_PREFIX + (c.username ?? c.id)!,
      limits: hasAny(own) ? own : undefined,
      admin: false,
      consumer: true,
    };
  }

  /** A Kong consumer identity under this config (a reload may have changed its limits). */
  consumerAgain(identity: Identity): Identity {
    return this.consumer({ username: identity.name.slice(CONSUMER_PREFIX.length) });
  }

  /** Identities an admin may name: every key and every consumer named in `by_name`. */
  named(name: string): Identity | undefined {
    if (!name.startsWith(CONSUMER_PREFIX)) return this.keys.get(name);
    const username = name.slice(CONSUMER_PREFIX.length);
    return Object.hasOwn(this.config.consumers.by_name, username)
      ? this.consumer({ username })
      : undefined;
  }

  /** Every identity with limits the config names (for `?all=true`). */
  limited(): Identity[] {
    const keys = [...this.keys.values()].filter((i) => i.limits);
    const consumers = Object.keys(this.config.consumers.by_name).map((username) =>
      this.consumer({ username })
    ).filter((i) => i.limits);
    return [...keys, ...consumers];
  }

  /**
   * USD of `usage` on `model` (the name the provider bills), or undefined when it has no price.
   * Cache reads and writes use their own prices when given, else the input price.
   */
  spend(model: string, usage: TokenUsage): number | undefined {
    const price = this.prices.find((p) => p.patterns.some((re) => re.test(model)))?.price;
    if (!price) return undefined;
    const read = usage.cacheReadTokens ?? 0;
    const write = usage.cacheWriteTokens ?? 0;
    const plain = Math.max(0, usage.inputTokens - read - write);
    const millionths = plain * price.input + read * (price.cache_read ?? price.input) +
      write * (price.cache_write ?? price.input) + usage.outputTokens * price.output;
    return millionths / 1_000_000;
  }
}
