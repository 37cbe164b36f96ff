/**
 * Requests that must reach one provider account: a pin names a provider and, in its key pool,
 * the key to send (a continuation token is good only at the account that issued it). Pins are
 * kept by what the provider issued, hashed, per gateway process, bounded in number and age; a
 * reload keeps them (one `Pins` for the gateway's life, on its snapshot).
 */
import type { ProviderConfig } from "../config/config.ts";
import type { PoolKey } from "../state/health.ts";
import { sha256 } from "./sha256.ts";

export interface Pin {
  /** The provider's configured name. */
  provider: string;
  /** The pool key's index (absent: the provider has one key, or none). */
  key?: number;
}

/** Pins kept at most; the oldest goes first. */
const MAX_PINS = 10_000;
/** How long a pin lasts after it was last issued. */
const PIN_TTL_MS = 60 * 60 * 1000;

export class Pins {
  /** Insertion order is age order: a pin issued again moves to the end. */
  private readonly pins = new Map<string, { pin: Pin; until: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** `owner`'s requests naming `issued` go where `pin` says. */
  remember(owner: string, issued: string, pin: Pin): void {
    const id = pinId(owner, issued);
    this.pins.delete(id);
    this.pins.set(id, { pin, until: this.now() + PIN_TTL_MS });
    if (this.pins.size > MAX_PINS) this.pins.delete(this.pins.keys().next().value!);
  }

  /** Where `owner`'s request naming `issued` must go, if a pin says. */
  get(owner: string, issued: string): Pin | undefined {
    const id = pinId(owner, issued);
    const kept = this.pins.get(id);
    if (kept && kept.until <= this.now()) this.pins.delete(id);
    return kept && kept.until > this.now() ? kept.pin : undefined;
  }
}

/**
 * The pool key `pin` names for `provider`, cooling or not (a request that must reach that
 * account has no other); undefined when it names none of this pool.
 */
export function pinnedKey(provider: ProviderConfig, pin: Pin): PoolKey | undefined {
  const index = pin.provider === provider.name ? pin.key : undefined;
  const pool = provider.api_keys ?? (provider.api_key ? [provider.api_key] : []);
  if (index === undefined || index >= pool.length) return undefined;
  return { value: pool[index], name: `${provider.name}#${index}`, index };
}

/** A fixed-size id (a token may be long): the SHA-256 of owner and value, as 32 characters. */
function pinId(owner: string, issued: string): string {
  return String.fromCharCode(...sha256(`${owner}\u0000${issued}`));
}
