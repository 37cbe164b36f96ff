/** What OpenAI's two HTTP APIs share: the error envelope and the response headers. */
import { ids } from "./ids.ts";
import type { ErrorDetail, ErrorReply } from "./vendor.ts";

interface OpenAIErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

const RATE_LIMIT = "Rate limit reached for mock-model in organization org-mock on tokens per min " +
  "(TPM): Limit 30000, Used 30000, Requested 11. Please try again in 1s. Visit " +
  "https://platform.openai.com/account/rate-limits to learn more.";

const SERVER_ERROR = "The server had an error while processing your request. Sorry about that! " +
  "You can retry your request, or contact us through our help center at help.openai.com if the " +
  "error persists.";

/** The `error` object for a status; `param` names the field a 400 blames. */
function errorBody(status: number, param: string): OpenAIErrorBody {
  switch (status) {
    case 400:
      return {
        message: "This model's maximum context length is 128000 tokens. However, your messages " +
          "resulted in 130011 tokens. Please reduce the length of the messages.",
        type: "invalid_request_error",
        param,
        code: "context_length_exceeded",
      };
    case 404:
      return {
        message: "The model `mock-missing` does not exist or you do not have access to it.",
        type: "invalid_request_error",
        param: null,
        code: "model_not_found",
      };
    case 429:
      return { message: RATE_LIMIT, type: "tokens", param: null, code: "rate_limit_exceeded" };
    case 503:
      return {
        message: "The server is overloaded. Please try again later.",
        type: "service_unavailable_error",
        param: null,
        code: "server_is_overloaded",
      };
    default:
      return { message: SERVER_ERROR, type: "server_error", param: null, code: null };
  }
}

/** OpenAI never sends 529; its overload answer is a 503. */
export function openaiStatus(status: number): number {
  return status === 529 ? 503 : status;
}

/** `{type,message,param,code}` for a status, with `detail` overriding the defaults. */
export function openaiErrorObject(
  status: number,
  param: string,
  detail?: ErrorDetail,
): OpenAIErrorBody {
  const base = errorBody(openaiStatus(status), param);
  if (!detail) return base;
  return {
    ...base,
    message: detail.message,
    param: detail.param ?? null,
    code: detail.code ?? null,
  };
}

export function openaiHeaders(): Record<string, string> {
  return {
    "x-request-id": ids.openaiRequest(),
    "openai-version": "2020-10-01",
    "openai-processing-ms": "42",
    // The provider account's limits, as OpenAI reports them on every answer.
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-remaining-requests": "9999",
    "x-ratelimit-reset-requests": "6ms",
    "x-ratelimit-limit-tokens": "30000000",
    "x-ratelimit-remaining-tokens": "29999000",
    "x-ratelimit-reset-tokens": "2ms",
  };
}

/** An HTTP error reply; `param` is the request field a context-length 400 names. */
export function openaiError(param: string) {
  return (status: number, detail?: ErrorDetail): ErrorReply => {
    const retry: Record<string, string> = status === 429 ? { "retry-after": "1" } : {};
    return {
      status: openaiStatus(status),
      body: { error: openaiErrorObject(status, param, detail) },
      headers: retry,
    };
  };
}

/** The message OpenAI sends for a body that is not JSON. */
export const OPENAI_BAD_JSON = "We could not parse the JSON body of your request. (HINT: This " +
  "likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON " +
  "payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix " +
  "this, please contact us through our help center at help.openai.com.)";

/** The message OpenAI sends for an unknown path. */
export const openaiNotFound = (method: string, path: string) => `Invalid URL (${method} ${path})`;
