/**
 * Client authentication. The config holds keys only as SHA-256 digests; a presented key is
 * hashed and compared in constant time against every configured one, so neither timing nor
 * early exit reveals which one matched or how much of a guess was right. A key that matched is
 * remembered, and compared the same way (below).
 */
import type { Config } from "../config/config.ts";
import { GatewayError } from "../kit/errors.ts";
import type { Dialect, SignedRequest } from "../kit/format.ts";
import { readBodyBytes } from "../kit/http.ts";
import { sha256 } from "./sha256.ts";

interface StoredKey {
  name: string;
  digest: Uint8Array;
}

interface MatchedKey {
  name: string;
  key: string;
}

function hexToBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g)!.map((h) => parseInt(h, 16)));
}

function equalDigests(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** Every character compared, whatever differs first; the time depends on `presented` alone. */
function equalTexts(presented: string, known: string): boolean {
  let diff = presented.length ^ known.length;
  // Past `known`'s end charCodeAt gives NaN, which `^` reads as 0; the lengths already differ.
  for (let i = 0; i < presented.length; i++) diff |= presented.charCodeAt(i) ^ known.charCodeAt(i);
  return diff === 0;
}

/** The name of the first entry `same` accepts; every entry is checked, always. */
function scan<T extends { name: string }>(
  entries: readonly T[],
  same: (entry: T) => boolean,
): string | undefined {
  let found: string | undefined;
  for (const e of entries) if (same(e) && found === undefined) found = e.name;
  return found;
}

export class KeyStore {
  /**
   * Presented keys that matched, in plaintext, and their names: hashing every request's key
   * showed on relayed JSON throughput (docs/performance.md). Only matches enter, so this holds at
   * most the configured keys, which every request carries anyway; a wrong key is always hashed.
   * Not a Map: its lookup compares text only when hashes agree, and V8's string hash is fixed
   * per build. A reload builds a new store, so a removed key stops matching at once.
   */
  private readonly matched: MatchedKey[] = [];

  private constructor(
    private readonly keys: StoredKey[],
    /** The keys configured in plaintext, by name: what a signed request is checked against. */
    private readonly plain: ReadonlyMap<string, readonly string[]>,
  ) {}

  static from(config: Pick<Config, "keys">): KeyStore {
    const plain = new Map<string, string[]>();
    for (const k of config.keys) {
      if ("key" in k) plain.set(k.name, [...plain.get(k.name) ?? [], k.key]);
    }
    return new KeyStore(
      config.keys.map((k) => ({
        name: k.name,
        digest: "key" in k ? sha256(k.key) : hexToBytes(k.sha256),
      })),
      plain,
    );
  }

  /** The plaintext keys of `name` (a key file's several), none for a digest or an unknown name. */
  keysNamed(name: string): readonly string[] {
    return this.plain.get(name) ?? [];
  }

  /** The name of the key that matches, or undefined. */
  match(presented: string): string | undefined {
    const known = scan(this.matched, (m) => equalTexts(presented, m.key));
    if (known !== undefined) return known;
    const digest = sha256(presented);
    const found = scan(this.keys, (k) => equalDigests(k.digest, digest));
    if (found !== undefined) this.matched.push({ name: found, key: presented });
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

/** A client that signed its request: its key's name, and the request with the body it signed. */
export interface Authenticated {
  name: string;
  req: Request;
}

/**
 * A request that carries no key but a signature made with one, where a dialect reads such
 * signatures: checked against each plaintext key of the name it gives (a key file may hold
 * several), over the body, which is read for it and goes on in a request of its own. Undefined
 * for any other request (`authenticate` then reads its key).
 */
export function authenticateSigned(
  store: KeyStore,
  dialects: readonly Dialect[],
  req: Request,
  url: URL,
  /** How long the body may take to arrive (`request_body_timeout_ms`). */
  bodyDeadlineMs: number,
): Promise<Authenticated> | undefined {
  for (const d of dialects) {
    if (!d.signedRequest) continue;
    if (d.presentedKey(req, url)) return undefined;
    const signed = d.signedRequest(req, url);
    if (signed) return verifySigned(store, signed, req, bodyDeadlineMs);
  }
  return undefined;
}

async function verifySigned(
  store: KeyStore,
  signed: SignedRequest,
  req: Request,
  bodyDeadlineMs: number,
): Promise<Authenticated> {
  const body = await readBodyBytes(req, bodyDeadlineMs);
  let refusal: unknown = new GatewayError(401, "authentication", "invalid API key");
  for (const key of store.keysNamed(signed.keyName)) {
    try {
      await signed.verify(key, body);
      const { method, headers, signal } = req;
      const carried = new Request(req.url, { method, headers, body, signal });
      return { name: signed.keyName, req: carried };
    } catch (e) {
      refusal = e;
    }
  }
  throw refusal;
}
