/** Google's error envelope, where Gemini clients put their key, and Gemini's model list. */
import { badRequest, type ErrorKind, type GatewayError } from "../../src/kit/errors.ts";
import type { Dialect, ModelListing } from "../../src/kit/format.ts";
import type { ListedModel } from "../../src/kit/format.ts";
import { DONE } from "../shared.ts";

const STATUS: Record<ErrorKind, string> = {
  invalid_request: "INVALID_ARGUMENT",
  authentication: "UNAUTHENTICATED",
  permission: "PERMISSION_DENIED",
  not_found: "NOT_FOUND",
  model_not_found: "NOT_FOUND",
  request_too_large: "INVALID_ARGUMENT",
  rate_limit: "RESOURCE_EXHAUSTED",
  upstream: "INTERNAL",
  overloaded: "UNAVAILABLE",
  timeout: "DEADLINE_EXCEEDED",
  upstream_interrupted: "UNAVAILABLE",
};

// Anthropic's 529 is unknown to js-genai (it does not retry it); 503 is what it knows.
const status = (s: number) => (s === 529 ? 503 : s);

export const googleDialect: Dialect = {
  id: "google",
  presentedKey(req, url) {
    if (url.searchParams.has("key")) {
      throw badRequest(
        "API keys in the ?key= query parameter are not accepted (URLs end up in logs); " +
          "send the key in the x-goog-api-key header",
        "key",
      );
    }
    return req.headers.get("x-goog-api-key") ?? req.headers.get("x-vendor2-api-key") ??
      undefined;
  },
  keyLocations: ["x-goog-api-key: <key>"],
  errorBody: (err: GatewayError) => ({
    error: { code: status(err.status), message: err.message, status: STATUS[err.kind] },
  }),
  status,
  interruption: (message) => {
    // js-genai raises an in-stream error only when it carries an HTTP-like `code`.
    const error = { type: "upstream_interrupted", message, code: 502, status: "UNAVAILABLE" };
    // The `[DONE]` record after it is what this gateway has always sent (the SDK skips it).
    return `data: ${JSON.stringify({ type: "upstream_interrupted", error })}\n\n${DONE}`;
  },
};

/** The model actions served (`POST /v1beta/models/{model}:<action>`); others are a 400. */
export const GENERATION_METHODS = ["generateContent", "streamGenerateContent"] as const;

const geminiModel = (m: ListedModel) => ({
  name: `models/${m.id}`,
  version: "001",
  displayName: m.display_name ?? m.id,
  ...(m.context_window && { inputTokenLimit: m.context_window }),
  ...(m.max_output_tokens && { outputTokenLimit: m.max_output_tokens }),
  supportedGenerationMethods: [...GENERATION_METHODS],
});

/** One model's metadata; the interface lists models at GET /v1/models only. */
export const geminiModels: ModelListing = {
  path: "/v1beta/models",
  name: "gemini_models",
  listedAt: "/v1/models",
  one: geminiModel,
};

/** What the gateway serves of a Gemini model: generation, or embeddings (`/v1/embeddings`). */
const SERVED_METHODS = ["generateContent", "embedContent"];

/**
 * A page of a Gemini provider's model list: the models that generate content or embed (not
 * those that only make images or answer questions over a corpus), by id without `models/`; the
 * next page by `nextPageToken`.
 */
export function geminiModelPage(body: Record<string, unknown>) {
  const models = Array.isArray(body.models) ? body.models : [];
  const ids = models.flatMap((m) =>
    typeof m?.name === "string" && Array.isArray(m.supportedGenerationMethods) &&
      SERVED_METHODS.some((method) => m.supportedGenerationMethods.includes(method))
      ? [m.name.replace(/^models\//, "")]
      : []
  );
  const token = body.nextPageToken;
  return { ids, next: typeof token === "string" && token ? { pageToken: token } : undefined };
}
