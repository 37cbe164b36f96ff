/**
 * OAuth2 access tokens for a Google service account (Vertex AI): a JWT signed RS256 with
 * WebCrypto is exchanged at the account file's `token_uri` (JWT-bearer grant). The token is
 * cached and refreshed ahead of expiry; concurrent callers share one refresh; each caller's
 * wait is abortable without failing the others'; every minted token is reported (`onToken`)
 * so that it can be scrubbed like a configured key.
 */

import { readAtMost } from "../../src/kit/http.ts";

const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** The longest assertion lifetime Google accepts. */
const ASSERTION_SECONDS = 3600;
/** A refresh ahead of expiry starts when this share of the lifetime is left, … */
const REFRESH_SHARE = 0.25;
/** … but never more than this before expiry. */
const MAX_REFRESH_AHEAD_MS = 5 * 60_000;
/** A token endpoint that has not answered by then has failed. */
const REFRESH_TIMEOUT_MS = 30_000;
/**
 * A token endpoint's answer is read this far at most (Google's are about 1 KB): a larger one is
 * refused unread, as a provider's body over its bound is, not held in memory.
 */
const MAX_ANSWER_BYTES = 64 * 1024;
/** The token endpoint's own words in an error are cut to this length (they come from outside). */
const MAX_REASON_CHARS = 200;

/** The fields of a service-account JSON file the token source reads. */
export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  token_uri: string;
  private_key_id?: string;
}

interface TokenSourceOptions {
  scope?: string;
  /** Called with every token minted, before any caller gets it. */
  onToken?: (token: string) => void;
}

/** The token endpoint refused or failed; the message never carries the assertion or a token. */
export class GoogleTokenError extends Error {
  override name = "GoogleTokenError";
}

interface Cached {
  token: string;
  /** From then on a refresh runs while callers still get this token, … */
  refreshAt: number;
  /** … and from then on they wait for it: too little is left for a call to start on it. */
  staleAt: number;
}

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const jsonPart = (value: unknown) => base64url(new TextEncoder().encode(JSON.stringify(value)));

function importPrivateKey(pem: string): Promise<CryptoKey> {
  const b64 = pem.replace(/-----(BEGIN|END) PRIVATE KEY-----|\s/g, "");
  const der = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const algorithm = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  return crypto.subtle.importKey("pkcs8", der, algorithm, false, ["sign"]);
}

export class GoogleTokenSource {
  #key: Promise<CryptoKey>;
  #cached?: Cached;
  #refreshing?: Promise<Cached>;

  constructor(
    private readonly account: ServiceAccountKey,
    private readonly options: TokenSourceOptions = {},
  ) {
    this.#key = importPrivateKey(account.private_key);
    // An unusable key fails the first token() call, not the process.
    this.#key.catch(() => {});
  }

  /**
   * A live access token: the cached one, or one refresh shared by every caller. Ahead of expiry
   * the refresh runs in the background and callers are not held up by it (nor failed: a failed
   * early refresh is tried again by the next caller).
   */
  async token(signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    const cached = this.#cached;
    const now = Date.now();
    if (cached && now < cached.refreshAt) return cached.token;
    const refreshing = this.#refreshing ??= this.#refresh().finally(() =>
      this.#refreshing = undefined
    );
    if (cached && now < cached.staleAt) {
      refreshing.catch(() => {});
      return cached.token;
    }
    return (await abortable(refreshing, signal)).token;
  }

  /** Drops `token` after the platform refused it (a 401), so that the next call refreshes. */
  invalidate(token: string): void {
    if (this.#cached?.token === token) this.#cached = undefined;
  }

  async #refresh(): Promise<Cached> {
    const response = await fetch(this.account.token_uri, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: JWT_BEARER, assertion: await this.#assertion() }),
      signal: AbortSignal.timeout(REFRESH_TIMEOUT_MS),
    }).catch((error) => {
      throw new GoogleTokenError(`token endpoint unreachable: ${(error as Error).message}`);
    });
    const bytes = await readAtMost(response.body, MAX_ANSWER_BYTES).catch(() => {
      throw new GoogleTokenError("token endpoint failed while sending its answer");
    });
    if (!bytes) {
      throw new GoogleTokenError(
        `token endpoint answered ${response.status} with more than ${MAX_ANSWER_BYTES} bytes`,
      );
    }
    const body = parseObject(bytes);
    const token = body?.access_token;
    const lifetime = Number(body?.expires_in) * 1000;
    if (!response.ok || typeof token !== "string" || !(lifetime > 0)) {
      throw new GoogleTokenError(`token endpoint answered ${response.status}: ${reasonOf(body)}`);
    }
    this.options.onToken?.(token);
    const expiresAt = Date.now() + lifetime;
    const ahead = Math.min(lifetime * REFRESH_SHARE, MAX_REFRESH_AHEAD_MS);
    this.#cached = { token, refreshAt: expiresAt - ahead, staleAt: expiresAt - ahead / 2 };
    return this.#cached;
  }

  async #assertion(): Promise<string> {
    const iat = Math.floor(Date.now() / 1000);
    const header = { alg: "RS256", typ: "JWT", kid: this.account.private_key_id };
    const claims = {
      iss: this.account.client_email,
      scope: this.options.scope ?? CLOUD_PLATFORM_SCOPE,
      aud: this.account.token_uri,
      iat,
      exp: iat + ASSERTION_SECONDS,
    };
    const unsigned = `${jsonPart(header)}.${jsonPart(claims)}`;
    const signature = await crypto.subtle.sign(
      "RSASSA-PKCS1-v1_5",
      await this.#key,
      new TextEncoder().encode(unsigned),
    );
    return `${unsigned}.${base64url(new Uint8Array(signature))}`;
  }
}

/** The answer's JSON object, or undefined if it is none. */
function parseObject(bytes: Uint8Array): Record<string, unknown> | undefined {
  try {
    const json = JSON.parse(new TextDecoder().decode(bytes));
    return json && typeof json === "object" ? json : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A JWT, or the start of one (a JSON header in base64url begins `eyJ`): an endpoint quoting the
 * signed assertion back must not pass it on, however much of it fits in the reason.
 */
const JWT = /eyJ[\w-]*(?:\.[\w-]*){0,2}/g;

/** Why the token endpoint refused, in its own words (OAuth2's fields), clipped, JWTs removed. */
function reasonOf(body: Record<string, unknown> | undefined): string {
  const reason = [body?.error_description, body?.error].find((r) => typeof r === "string");
  return (reason as string | undefined)?.replace(JWT, "[redacted]").slice(0, MAX_REASON_CHARS) ??
    "no access token in the answer";
}

/** `promise`, or its rejection with the signal's reason as soon as `signal` aborts. */
function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
