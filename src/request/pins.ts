/**
 * Requests that must reach one provider account: a pin names a provider and, in its key pool,
 * the key to send (a continuation token is good only at the account that issued it). Pins are
 * kept by what the provider issued, hashed, bounded in number and age, per gateway instance: a
 * gateway of several threads (`workers`) keeps them in its supervisor, so a continuation that
 * reaches another thread than its first hop finds its pin. A reload keeps them (one store for
 * the gateway's life, on its snapshot).
 */
import type { Call } from "../state/shared_stores.ts";
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

/** Where a gateway keeps its pins. */
export interface PinStore {
  /** `owner`'s requests naming `issued` go where `pin` says. */
  remember(owner: string, issued: string, pin: Pin): void;
  /** Where `owner`'s request naming `issued` must go, if a pin says. */
  get(owner: string, issued: string): Promise<Pin | undefined>;
}

/** Pins in memory: a lone gateway's, or a supervisor's for all its threads (`SharedPins`). */
export class Pins implements PinStore {
  /** Insertion order is age order: a pin issued again moves to the end. */
  private readonly pins = new Map<string, { pin: Pin; until: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  remember(owner: string, issued: string, pin: Pin): void {
    this.keep(pinId(owner, issued), pin);
  }

  get(owner: string, issued: string): Promise<Pin | undefined> {
    return Promise.resolve(this.find(pinId(owner, issued)));
  }

  /** A thread's call (`SharedPins`), answered. */
  answer(op: string, args: unknown[]): Promise<unknown> {
    if (op === "keep") return Promise.resolve(this.keep(args[0] as string, args[1] as Pin));
    if (op === "find") return Promise.resolve(this.find(args[0] as string));
    return Promise.reject(new Error(`no such pins call: ${op}`));
  }

  private keep(id: string, pin: Pin): void {
    this.pins.delete(id);
    this.pins.set(id, { pin, until: this.now() + PIN_TTL_MS });
    if (this.pins.size > MAX_PINS) this.pins.delete(this.pins.keys().next().value!);
  }

  private find(id: string): Pin | undefined {
    const kept = this.pins.get(id);
    if (kept && kept.until <= this.now()) this.pins.delete(id);
    return kept && kept.until > this.now() ? kept.pin : undefined;
  }
}

/**
 * A gateway thread's pins: its supervisor's, by message (ids hashed here, so no token crosses).
 * Paid only by relayed answers that issue a token on a route with a choice of account, and by
 * requests that continue one.
 */
export class SharedPins implements PinStore {
  constructor(private readonly call: Call) {}

  remember(owner: string, issued: string, pin: Pin): void {
    // A pin lost (the supervisor stopping) leaves the continuation routed as any request.
    this.call("pins", "keep", [pinId(owner, issued), pin]).catch(() => {});
  }

  async get(owner: string, issued: string): Promise<Pin | undefined> {
    try {
      return await this.call("pins", "find", [pinId(owner, issued)]) as Pin | undefined;
    } catch {
      return undefined;
    }
  }
}

/** A fixed-size id (a token may be long): the SHA-256 of owner and value, as 32 characters. */
function pinId(owner: string, issued: string): string {
  return String.fromCharCode(...sha256(`${owner}\u0000${issued}`));
}
