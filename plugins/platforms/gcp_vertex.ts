/**
 * Google Vertex AI as a platform: the `gcp` config block, the service-account file, the URLs of
 * Gemini (generateContent) and Claude (rawPredict) models on Vertex and of its embeddings models
 * (vertex_embeddings.ts), the Claude body Vertex wants (vertex_wire.ts), and the OAuth2 access
 * token every call carries (google_token.ts).
 */
import { z } from "zod";
import type { OutgoingRequest } from "../../src/kit/format.ts";
import { type CredentialFileError, readCredentialFile } from "../../src/kit/credential_file.ts";
import { DEFAULT_OPERATIONS, type Platform, type PlatformCall } from "../../src/kit/platform.ts";
import { unsafeSegmentReason } from "../../src/kit/model_segment.ts";
import { toCloudBody } from "./claude_body.ts";
import { GoogleTokenSource, type ServiceAccountKey } from "./google_token.ts";
import { modelsAt, PUBLISHERS, VERTEX_CLAUDE, vertexPath } from "./vertex_wire.ts";
import { vertexEmbeddings } from "./vertex_embeddings.ts";

/** Where a service-account file without a `token_uri` gets its tokens (Google's own files name it). */
const GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token";

/**
 * The `gcp:` block of a `platform: gcp-vertex` provider. The service-account file is read and
 * checked at every load (editing it and reloading rotates the key), so a bad one is a config
 * error at `gcp.credentials_file`; the parsed account rides along as `account`.
 */
export const gcpSchema = z.strictObject({
  /** One URL path segment (a legacy domain-scoped id holds `.` and `:`). */
  project: z.string().regex(/^[a-z0-9][a-z0-9.:-]*$/, "expected a GCP project id (my-project)"),
  /** Also part of the default host name. */
  location: z.string().regex(
    /^[a-z0-9][a-z0-9-]*$/,
    "expected a GCP location (us-central1, global)",
  ),
  /** A service-account JSON key file. */
  credentials_file: z.string().min(1),
}).transform((gcp, ctx) => {
  const fail = (message: string) => {
    ctx.addIssue({ code: "custom", path: ["credentials_file"], message });
    return z.NEVER;
  };
  let text: string;
  try {
    text = readCredentialFile(gcp.credentials_file);
  } catch (e) {
    return fail((e as CredentialFileError).message);
  }
  try {
    return { ...gcp, account: parseServiceAccount(text) };
  } catch (e) {
    return fail(`the file ${(e as Error).message}`);
  }
});
type GcpConfig = z.output<typeof gcpSchema>;

/** Vertex's endpoint for a location: regional, or the global one. */
export function vertexBaseUrl(location: string): string {
  return location === "global"
    ? "https://aiplatform.googleapis.com"
    : `https://${location}-aiplatform.googleapis.com`;
}

/** A service-account file unusable as such; the message names the field, never a key. */
export class ServiceAccountError extends Error {
  override name = "ServiceAccountError";
}

/** The service account in `json` (a key file's text), its `token_uri` defaulted to Google's. */
export function parseServiceAccount(json: string): ServiceAccountKey {
  let file: Record<string, unknown>;
  try {
    file = JSON.parse(json);
  } catch {
    throw new ServiceAccountError("is not JSON (expected a service-account key file)");
  }
  if (!file || typeof file !== "object" || Array.isArray(file)) {
    throw new ServiceAccountError("is not a JSON object (expected a service-account key file)");
  }
  if (file.type !== undefined && file.type !== "service_account") {
    throw new ServiceAccountError('has a type other than "service_account"');
  }
  const text = (field: string) => {
    const value = file[field];
    if (typeof value !== "string" || value === "") {
      throw new ServiceAccountError(`has no ${field} (a service-account key file has one)`);
    }
    return value;
  };
  const privateKey = text("private_key");
  if (!privateKey.includes("-----BEGIN PRIVATE KEY-----")) {
    throw new ServiceAccountError("has a private_key that is not a PEM PKCS#8 private key");
  }
  const tokenUri = file.token_uri === undefined ? GOOGLE_TOKEN_URI : text("token_uri");
  if (!URL.canParse(tokenUri) || !/^https?:$/.test(new URL(tokenUri).protocol)) {
    throw new ServiceAccountError("has a token_uri that is not an http(s) URL");
  }
  const keyId = typeof file.private_key_id === "string" ? file.private_key_id : undefined;
  return {
    client_email: text("client_email"),
    private_key: privateKey,
    token_uri: tokenUri,
    ...(keyId && { private_key_id: keyId }),
  };
}

/**
 * A Vertex provider's credential: an access token minted from its service account, every one
 * registered (`register`, the current and previous one kept) before it is sent, so that an upstream
 * echoing it is scrubbed.
 */
export class VertexCredential {
  readonly #tokens: GoogleTokenSource;

  constructor(account: ServiceAccountKey, register: (secret: string) => void) {
    this.#tokens = new GoogleTokenSource(account, { onToken: register });
  }

  /** `Authorization: Bearer` with a live token (a configured `api_key` has no use here). */
  async authorize(req: OutgoingRequest, _key?: string, signal?: AbortSignal): Promise<void> {
    req.headers.set("authorization", `Bearer ${await this.#tokens.token(signal)}`);
  }

  /**
   * Vertex refused the token `req` carried (a 401): the next call mints a new one. Only that
   * token is dropped, so however many calls saw it refused, one refresh replaces it.
   */
  refused(req: Pick<OutgoingRequest, "headers">): void {
    const token = req.headers.get("authorization")?.match(/^Bearer (.+)$/)?.[1];
    if (token) this.#tokens.invalidate(token);
  }
}

/**
 * A body as Vertex takes it. Claude's: the version into the body and `model` removed (the URL
 * names it; Vertex refuses it) except for token counting, whose URL does not, so it says which
 * model's tokenizer counts. Gemini's body is Vertex's as is.
 */
export function vertexBody(
  api: string,
  body: Record<string, unknown>,
  headers: Headers,
  call: Pick<PlatformCall, "operation" | "model">,
): Record<string, unknown> {
  if (api !== PUBLISHERS.anthropic.api) return body;
  const counting = call.operation === "count_tokens" ? call.model : undefined;
  return toCloudBody(body, headers, VERTEX_CLAUDE, counting);
}

/** The query of a call's path: a Gemini stream's `?alt=sse`, or none (a JSON-array stream). */
function queryOf(path: string): string {
  const at = path.indexOf("?");
  return at < 0 ? "" : path.slice(at);
}

/** `platform: gcp-vertex`: Gemini and Claude models on Vertex AI. */
export const gcpVertexPlatform: Platform<GcpConfig> = {
  id: "gcp-vertex",
  system: "gcp.vertex_ai",
  apis: Object.values(PUBLISHERS).map((p) => p.api),
  settings: { key: "gcp", schema: gcpSchema },
  address: {
    // Embeddings are Google's models whatever the api (vertex_embeddings.ts has their paths).
    url: ({ base_url, settings, api }, call) =>
      base_url +
      (call.operation === "embeddings"
        ? modelsAt(settings, "google") + call.path
        : vertexPath(settings, api, call.model, call.operation, call.stream, queryOf(call.path))),
    defaultBaseUrl: (gcp) => vertexBaseUrl(gcp.location),
    operations: [...DEFAULT_OPERATIONS, "embeddings"],
  },
  credential: (provider, ctx) => new VertexCredential(provider.settings.account, ctx.minted),
  body: {
    request: (body, headers, call, provider) =>
      call.operation === "embeddings" ? body : vertexBody(provider.api, body, headers, call),
    embeddings: vertexEmbeddings,
  },
  // The model is a path segment followed by `:action`.
  models: { unsafe: (model) => unsafeSegmentReason(model, true) },
};
