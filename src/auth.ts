/**
 * Client authentication. Keys are kept only as SHA-256 digests and compared in constant time
 * against every configured key, so neither timing nor early exit reveals which one matched.
 */
import type { Config } from "./config.ts";
import type { Dialect } from "./endpoints.ts";
import { badRequest, GatewayError } from "./errors.ts";

interface StoredKey {
  name: string;
  digest: Uint8Array;
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
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

  static async from(config: Config): Promise<KeyStore> {
    const keys = await Promise.all(config.keys.map(async (k) => ({
      name: k.name,
      digest: "key" in k ? await sha256(k.key) : hexToBytes(k.sha256),
    })));
    return new KeyStore(keys);
  }

  /** The name of the key that matches, or undefined. Checks every key, always. */
  async match(presented: string): Promise<string | undefined> {
    const digest = await sha256(presented);
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

/** Where each dialect's clients put their key (real SDKs, see docs/real-clients). */
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
export async function authenticate(
  store: KeyStore,
  dialect: Dialect,
  req: Request,
  url: URL,
): Promise<string> {
  const key = presentedKey(dialect, req, url);
  if (!key) {
    throw new GatewayError(401, "authentication", `missing API key: send ${KEY_HINT[dialect]}`);
  }
  const name = await store.match(key);
  if (!name) throw new GatewayError(401, "authentication", "invalid API key");
  return name;
}
