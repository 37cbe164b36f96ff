/**
 * A loopback Google Vertex AI: an OAuth2 token endpoint (`POST /token`, JWT-bearer grant) that
 * checks the RS256 assertion against the service account's public key and its claims before
 * issuing a short-lived access token, and the Vertex model endpoints, which accept only a live
 * token it issued (else Google's 401 UNAUTHENTICATED):
 * - …/publishers/google/models/{model}:generateContent | :streamGenerateContent[?alt=sse]
 * - …/publishers/anthropic/models/{model}:rawPredict | :streamRawPredict (Anthropic's body
 *   with `anthropic_version` and no `model`), …/anthropic/models/count-tokens:rawPredict
 * - …/publishers/google/models/{model}:predict | :embedContent (embeddings, embeddings.ts)
 * where … is /v1/projects/{project}/locations/{location} (v1beta1 too, as @google/genai uses).
 * Content, scenarios and faults are upstream.ts's (the model name picks them).
 */
import { anthropicVersionProblem } from "./claude_body.ts";
import { vertexEmbeddingsEndpoints } from "./embeddings.ts";
import type { PromptCaches } from "./prompt_cache.ts";
import { generateContent } from "./generate-content.ts";
import { messages } from "./messages.ts";
import { createServiceAccount, RS256, type ServiceAccountJson } from "./service_account.ts";
import {
  bodyStream,
  type Endpoint,
  type MockPlatform,
  type MockUpstream,
  startMockUpstream,
} from "./upstream.ts";
import { countTokens, type Json, type Vendor } from "./vendor.ts";
import { GEMINI_ARRAY, GEMINI_SSE, TYPED_SSE } from "./wire.ts";

export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** The audience google-auth-library signs for, whatever the file's token_uri says. */
export const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** The longest assertion Google accepts (exp − iat), and the clock skew it tolerates. */
const MAX_ASSERTION_S = 3600;
const SKEW_S = 300;

export interface MockVertex extends MockUpstream {
  /** The service account this Vertex trusts; its token_uri is this mock's `/token`. */
  serviceAccount: ServiceAccountJson;
  /** How many access tokens the token endpoint has issued. */
  tokensIssued(): number;
  /** Revokes every token issued so far: the model endpoints answer them 401. */
  revokeTokens(): void;
  /** While set, the model endpoints answer every token 401 (a key revoked at Google). */
  refuseTokens: boolean;
  /** While set, the token endpoint answers 503 (Google's OAuth2 backend down). */
  tokenEndpointDown: boolean;
}

export interface VertexOptions {
  /** Lifetime of issued access tokens, in seconds (Google's is 3599). */
  expiresIn?: number;
  /** Prompt caching as Vertex does it (upstream.ts `MockOptions.caching`). */
  caching?: PromptCaches;
}

const vertexClaude: Vendor = {
  ...messages,
  validate(body: Json) {
    if ("model" in body) return "model: Extra inputs are not permitted";
    return anthropicVersionProblem(body, VERTEX_ANTHROPIC_VERSION) ?? messages.validate(body);
  },
};

const PREFIX = String.raw`^/v1(?:beta1)?/projects/[^/]+/locations/[^/]+/publishers`;
const at = (rest: string) => new RegExp(`${PREFIX}/${rest}$`);
const modelOf = (m: RegExpMatchArray) => decodeURIComponent(m[1]);

const ENDPOINTS: Endpoint[] = [
  {
    path: at("google/models/([^/:]+):generateContent"),
    vendor: generateContent,
    model: modelOf,
    framing: () => undefined,
  },
  {
    path: at("google/models/([^/:]+):streamGenerateContent"),
    vendor: generateContent,
    model: modelOf,
    framing: (c) => c.url.searchParams.get("alt") === "sse" ? GEMINI_SSE : GEMINI_ARRAY,
  },
  {
    path: at("anthropic/models/count-tokens:rawPredict"),
    vendor: messages,
    answer: (c) => ({ input_tokens: countTokens(c.text) }),
  },
  {
    path: at("anthropic/models/([^/:]+):rawPredict"),
    vendor: vertexClaude,
    model: modelOf,
    framing: () => undefined,
  },
  {
    path: at("anthropic/models/([^/:]+):streamRawPredict"),
    vendor: vertexClaude,
    model: modelOf,
    framing: bodyStream(TYPED_SSE),
  },
  ...vertexEmbeddingsEndpoints(generateContent, at),
];

const json = (body: unknown, status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=UTF-8", ...headers },
  });

/** An OAuth2 error of the token endpoint (RFC 6749 shape, as Google sends it). */
const oauthError = (error: string, description: string) =>
  json({ error, error_description: description }, 400);

/** Google's 401 for a missing, unknown or expired access token. */
function unauthenticated(reason: string): Response {
  return json(
    {
      error: {
        code: 401,
        message: "Request had invalid authentication credentials. Expected OAuth 2 access token, " +
          "login cookie or other valid authentication credential. See " +
          "https://developers.google.com/identity/sign-in/web/devconsole-project.",
        status: "UNAUTHENTICATED",
        details: [{
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason,
          domain: "googleapis.com",
          metadata: { service: "aiplatform.googleapis.com" },
        }],
      },
    },
    401,
    { "www-authenticate": 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
  );
}

const b64urlBytes = (s: string) =>
  Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
const b64urlJson = (s: string): Json => {
  try {
    return JSON.parse(new TextDecoder().decode(b64urlBytes(s)));
  } catch {
    return undefined;
  }
};

/** Issues and checks access tokens for one service account. */
class TokenAuthority {
  issued = 0;
  #expiries = new Map<string, number>();

  constructor(
    private readonly account: ServiceAccountJson,
    private readonly publicKey: CryptoKey,
    private readonly expiresIn: number,
  ) {}

  /** The token endpoint: a JWT-bearer grant whose assertion the account signed. */
  async grant(form: URLSearchParams): Promise<Response> {
    if (form.get("grant_type") !== JWT_BEARER) {
      return oauthError("unsupported_grant_type", `Invalid grant_type: ${form.get("grant_type")}`);
    }
    const problem = await this.#checkAssertion(form.get("assertion") ?? "");
    if (problem) return problem;
    const token = `ya29.mock-${crypto.randomUUID()}`;
    this.#expiries.set(token, Date.now() + this.expiresIn * 1000);
    this.issued++;
    return json({ access_token: token, expires_in: this.expiresIn, token_type: "Bearer" }, 200);
  }

  async #checkAssertion(assertion: string): Promise<Response | undefined> {
    const [head, body, sig] = assertion.split(".");
    const header = b64urlJson(head ?? "");
    const claims = b64urlJson(body ?? "");
    if (header?.alg !== "RS256" || !claims || sig === undefined) {
      return oauthError("invalid_request", "Invalid JWT: the assertion is not a signed RS256 JWT.");
    }
    const signed = new TextEncoder().encode(`${head}.${body}`);
    if (!await crypto.subtle.verify(RS256, this.publicKey, b64urlBytes(sig), signed)) {
      return oauthError("invalid_grant", "Invalid JWT Signature.");
    }
    if (claims.iss !== this.account.client_email) {
      return oauthError("invalid_grant", "Invalid grant: account not found");
    }
    if (![this.account.token_uri, GOOGLE_TOKEN_URL].includes(claims.aud)) {
      return oauthError(
        "invalid_grant",
        `Invalid JWT: Failed audience check. The right audience is ${this.account.token_uri}`,
      );
    }
    const now = Date.now() / 1000;
    const { iat, exp } = claims;
    if (
      typeof iat !== "number" || typeof exp !== "number" || exp - iat > MAX_ASSERTION_S ||
      iat > now + SKEW_S || exp < now - SKEW_S
    ) {
      return oauthError(
        "invalid_grant",
        "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable " +
          "timeframe. Check your iat and exp values in the JWT claim.",
      );
    }
    if (!String(claims.scope ?? "").split(" ").includes(CLOUD_PLATFORM_SCOPE)) {
      return oauthError("invalid_scope", "Invalid OAuth scope or ID token audience provided.");
    }
  }

  revoke(): void {
    this.#expiries.clear();
  }

  /** Google's 401 unless `authorization` carries a live token this authority issued. */
  check(authorization: string | null, refuse: boolean): Response | undefined {
    const token = authorization?.match(/^Bearer (.+)$/)?.[1];
    if (token === undefined) return unauthenticated("CREDENTIALS_MISSING");
    const expiry = refuse ? undefined : this.#expiries.get(token);
    if (expiry === undefined) return unauthenticated("ACCESS_TOKEN_TYPE_UNSUPPORTED");
    if (expiry <= Date.now()) return unauthenticated("ACCESS_TOKEN_EXPIRED");
  }
}

export async function startMockVertex(options: VertexOptions = {}): Promise<MockVertex> {
  // The token URI names the server, which gets its port on listen: it is filled in then.
  const account = await createServiceAccount("");
  const authority = new TokenAuthority(account.json, account.publicKey, options.expiresIn ?? 3599);
  const platform: MockPlatform = {
    endpoints: ENDPOINTS,
    fallback: generateContent,
    async intercept(req, url, text) {
      if (url.pathname === "/token" && req.method === "POST") {
        if (vertex.tokenEndpointDown) return json({ error: "backend_error" }, 503);
        return await authority.grant(new URLSearchParams(text));
      }
      return authority.check(req.headers.get("authorization"), vertex.refuseTokens);
    },
    // Its access tokens come and go: the project is the account.
    account: (_, url) => url.pathname.match(/\/projects\/([^/]+)\//)?.[1] ?? "",
  };
  const upstream = await startMockUpstream({ platform, caching: options.caching });
  account.json.token_uri = `${upstream.url}/token`;
  const vertex: MockVertex = Object.assign(upstream, {
    serviceAccount: account.json,
    tokensIssued: () => authority.issued,
    revokeTokens: () => authority.revoke(),
    refuseTokens: false,
    tokenEndpointDown: false,
  });
  return vertex;
}
