/**
 * One error model, three envelopes. Code throws `GatewayError`; the server renders it in the
 * dialect of the path the client called (OpenAI, Anthropic or Google shape).
 */
import type { Dialect } from "./endpoints.ts";

/** Vendor-neutral error kinds; each dialect names them its own way. */
export type ErrorKind =
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "model_not_found"
  | "request_too_large"
  | "rate_limit"
  | "upstream"
  | "overloaded"
  | "timeout"
  | "upstream_interrupted";

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly kind: ErrorKind,
    message: string,
    /** The request field at fault, when there is one (OpenAI `param`). */
    readonly param?: string,
    /** Provider headers worth relaying with the error (retry hints). */
    readonly headers?: Headers,
    /** OpenAI `code` when it is more specific than the kind's (`previous_response_not_found`). */
    readonly code?: string,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, param?: string) =>
  new GatewayError(400, "invalid_request", message, param);

export const notFound = (message: string) => new GatewayError(404, "not_found", message);

/** A feature the target cannot express: rejected, never dropped (names field and route). */
export function unsupported(field: string, route: string, what?: string): GatewayError {
  const detail = what ? `${what}` : `${field} cannot be expressed`;
  return badRequest(`${detail} by the upstream of route ${route} (field: ${field})`, field);
}

const KIND_BY_STATUS: Record<number, ErrorKind> = {
  400: "invalid_request",
  401: "authentication",
  403: "permission",
  404: "not_found",
  413: "request_too_large",
  429: "rate_limit",
  503: "overloaded",
  504: "timeout",
  529: "overloaded",
};

export function kindForStatus(status: number): ErrorKind {
  return KIND_BY_STATUS[status] ?? (status >= 500 ? "upstream" : "invalid_request");
}

const OPENAI_TYPE: Record<ErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "invalid_request_error",
  permission: "permission_error",
  not_found: "invalid_request_error",
  model_not_found: "invalid_request_error",
  request_too_large: "invalid_request_error",
  rate_limit: "rate_limit_error",
  upstream: "server_error",
  overloaded: "service_unavailable_error",
  timeout: "timeout_error",
  upstream_interrupted: "upstream_interrupted",
};

const OPENAI_CODE: Partial<Record<ErrorKind, string>> = {
  authentication: "invalid_api_key",
  model_not_found: "model_not_found",
  rate_limit: "rate_limit_exceeded",
  upstream_interrupted: "upstream_interrupted",
};

/** An OpenAI error `code` for a kind (its type where OpenAI has no code): stream error events. */
export const openAiErrorCode = (kind: ErrorKind): string => OPENAI_CODE[kind] ?? OPENAI_TYPE[kind];

const ANTHROPIC_TYPE: Record<ErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "authentication_error",
  permission: "permission_error",
  not_found: "not_found_error",
  model_not_found: "not_found_error",
  request_too_large: "request_too_large",
  rate_limit: "rate_limit_error",
  upstream: "api_error",
  overloaded: "overloaded_error",
  timeout: "timeout_error",
  upstream_interrupted: "upstream_interrupted",
};

const GOOGLE_STATUS: Record<ErrorKind, string> = {
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

/**
 * Statuses a client SDK must see. Anthropic's 529 is unknown to OpenAI and Google SDKs
 * (js-genai does not retry it), so it becomes 503 outside the Anthropic dialect.
 */
export function statusFor(dialect: Dialect, status: number): number {
  return status === 529 && dialect !== "anthropic" ? 503 : status;
}

/** The JSON error body of `dialect` for an error. */
export function errorBody(dialect: Dialect, err: GatewayError, requestId?: string): unknown {
  switch (dialect) {
    case "openai":
      return {
        error: {
          message: err.message,
          type: OPENAI_TYPE[err.kind],
          param: err.param ?? null,
          code: err.code ?? OPENAI_CODE[err.kind] ?? null,
        },
      };
    case "anthropic":
      return {
        type: "error",
        error: { type: ANTHROPIC_TYPE[err.kind], message: err.message },
        ...(requestId ? { request_id: requestId } : {}),
      };
    case "google":
      return {
        error: {
          code: statusFor("google", err.status),
          message: err.message,
          status: GOOGLE_STATUS[err.kind],
        },
      };
  }
}

export function errorResponse(dialect: Dialect, err: GatewayError, requestId?: string): Response {
  return Response.json(errorBody(dialect, err, requestId), {
    status: statusFor(dialect, err.status),
    headers: err.headers,
  });
}

/** A short, single-line excerpt of a non-JSON error body (an nginx HTML page, plain text). */
function errorExcerpt(text: string, max = 300): string {
  const plain = text
    .replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, " ")
    .replace(/<[^>]*>/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return plain.length > max ? `${plain.slice(0, max)}…` : plain;
}

/**
 * Reads a provider's error body (any of the three envelopes, or plain text and HTML) into a
 * GatewayError with the provider's status, for re-wrapping in the client's dialect. The text
 * must already be scrubbed of provider keys.
 */
export function fromProviderError(status: number, text: string, headers?: Headers): GatewayError {
  let kind = kindForStatus(status);
  let message: string | undefined;
  try {
    const body = JSON.parse(text);
    const e = body?.error;
    if (e && typeof e.message === "string") message = e.message.slice(0, 2000);
    if (e?.type === "overloaded_error") kind = "overloaded";
  } catch {
    // not JSON: an excerpt of the text below
  }
  const excerpt = message === undefined ? errorExcerpt(text) : "";
  message ??= `upstream returned HTTP ${status}${excerpt ? `: ${excerpt}` : ""}`;
  return new GatewayError(status, kind, message, undefined, headers);
}
