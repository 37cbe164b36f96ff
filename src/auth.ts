/**
 * Client authentication. The config holds keys only as SHA-256 digests; a presented key is
 * hashed and compared in constant time against every configured one, so neither timing nor
 * early exit reveals which one matched. A key that matched is remembered (below).
 */
import type { Config } from "./config.ts";
import { GatewayError } from "./errors.ts";
import type { Dialect } from "./format.ts";
import { sha256 } from "./sha256.ts";

interface StoredKey {
  name: string;
  digest: Uint8Array;
}

function hexToBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g)!.map((h) => parseInt(h, 16)));
}

function equalDigests(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export class KeyStore {
  /**
   * Presented keys that matched, and their names: hashing every request's key cost ~4% of
   * relayed JSON throughput (BENCHMARKS.md). Only matches enter, so this holds at most the
   * configured keys, in plaintext as every request carries them; a wrong key is always hashed
   * and compared in full. A reload builds a new store, so a removed key stops matching at once.
   */
  private readonly matched = new Map<string, string>();

  private constructor(private readonly keys: StoredKey[]) {}

  static from(config: Config): KeyStore {
    return new KeyStore(config.keys.map((k) => ({
      name: k.name,
      digest: "key" in k ? sha256(k.key) : hexToBytes(k.sha256),
    })));
  }

  /** The name of the key that matches, or undefined. A key not matched before is checked against every key. */
  match(presented: string): string | undefined {
    const known = this.matched.get(presented);
    if (known !== undefined) return known;
    const digest = sha256(presented);
    let found: string | undefined;
    for (const k of this.keys) {
      if (equalDigests(k.digest, digest) && found === undefined) found = k.name;
    }
    if (found !== undefined) this.matched.set(presented, found);
    return found;
  }
}

/** The key presented where any of `dialects` puts it (a path formats share accepts each). */
function presentedKey(dialects: readonly Dialect[], req: Request, url: URL): string | undefined {
  for (const d of dialects) {
    const key = d.presentedKey(req, url);
    if (key) return key;
  }
  return undefined;
}

/** Authenticates a request; returns the client key's name or throws a 401. */
export function authenticate(
  store: KeyStore,
  dialects: readonly Dialect[],
  req: Request,
  url: URL,
): string {
  const key = presentedKey(dialects, req, url);
  if (!key) {
    const hint = [...new Set(dialects.flatMap((d) => d.keyLocations))].join(" or ");
    throw new GatewayError(401, "authentication", `missing API key: send ${hint}`);
  }
  const name = store.match(key);
  if (!name) throw new GatewayError(401, "authentication", "invalid API key");
  return name;
}
