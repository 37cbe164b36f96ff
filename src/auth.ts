/**
 * Client authentication. Keys are kept only as SHA-256 digests and compared in constant time
 * against every configured key, so neither timing nor early exit reveals which one matched.
 */
import { createHash } from "node:crypto";
import type { Config } from "./config.ts";
import type { Dialect } from "./endpoints.ts";
import { badRequest, GatewayError } from "./errors.ts";

interface StoredKey {
  name: string;
  digest: Uint8Array;
}

/** Synchronous: Web Crypto's async digest costs an op round trip on every request. */
function sha256(text: string): Uint8Array {
  return createHash("sha256").update(text).digest();
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
  private constructor(private readonly keys: StoredKey[]) {}

  static from(config: Config): KeyStore {
    return new KeyStore(config.keys.map((k) => ({
      name: k.name,
      digest: "key" in k ? sha256(k.key) : hexToBytes(k.sha256),
    })));
  }

  /** The name of the key that matches, or undefined. Checks every key, always. */
  match(presented: string): string | undefined {
    const digest = sha256(presented);
    let found: string | undefined;
    for (const k of this.keys) {
      if (equalDigests(k.digest, digest) && found === undefined) found = k.name;
    }
    return found;
  }
}

function bearer(headers: Headers): string | undefined {
  const m = headers.get("authorization")?.match(/^Bearer\s+(.+)$/i);
  return m?.[1].trim();
}

/** Where each dialect's clients put their key (as the real SDKs send it; tests/sdk/ drives them). */
export function presentedKey(dialect: Dialect, req: Request, url: URL): string | undefined {
  const h = req.headers;
  switch (dialect) {
    case "openai":
      return bearer(h);
    case "anthropic":
      return h.get("x-api-key") ?? bearer(h);
    case "google":
      if (url.searchParams.has("key")) {
        throw badRequest(
          "API keys in the ?key= query parameter are not accepted (URLs end up in logs); " +
            "send the key in the x-goog-api-key header",
          "key",
        );
      }
      return h.get("x-goog-api-key") ?? h.get("x-vendor2-api-key") ?? undefined;
  }
}

const KEY_HINT: Record<Dialect, string> = {
  openai: "Authorization: Bearer <key>",
  anthropic: "x-api-key: <key> (or Authorization: Bearer <key>)",
  google: "x-goog-api-key: <key>",
};

/** Authenticates a request; returns the client key's name or throws a 401. */
export function authenticate(
  store: KeyStore,
  dialect: Dialect,
  req: Request,
  url: URL,
): string {
  const key = presentedKey(dialect, req, url);
  if (!key) {
    throw new GatewayError(401, "authentication", `missing API key: send ${KEY_HINT[dialect]}`);
  }
  const name = store.match(key);
  if (!name) throw new GatewayError(401, "authentication", "invalid API key");
  return name;
}
