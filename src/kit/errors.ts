/**
 * One error model; each format plugin's dialect renders it in its own envelope. Code throws
 * `GatewayError`; the server renders it in the dialect of the path the client called.
 */

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

/** The client went away (or its connection broke): nothing is left to answer. */
export class ClientGone extends Error {}

export class GatewayError extends Error {
  /** Whether another attempt may succeed, where a platform said; absent: `retry.on` decides. */
  retry?: boolean;

  constructor(
    readonly status: number,
    readonly kind: ErrorKind,
    message: string,
    /** The request field at fault, when there is one. */
    readonly param?: string,
    /** Provider headers worth relaying with the error (retry hints). */
    readonly headers?: Headers,
    /** A code more specific than the kind (`previous_response_not_found`), for dialects that carry one. */
    readonly code?: string,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, param?: string) =>
  new GatewayError(400, "invalid_request", message, param);

export const notFound = (message: string) => new GatewayError(404, "not_found", message);

/**
 * An upstream stream event that cannot be read (broken JSON, or not an event object): thrown by
 * a framing's reader or a codec's stream decoder, it ends the client's stream with its format's
 * interruption ending, like a cut.
 */
export const malformedEvent = () =>
  new GatewayError(502, "upstream", "the upstream sent a malformed event");

/** A feature the target cannot express: rejected, never dropped (names field and route). */
export function unsupported(field: string, route: string, what?: string): GatewayError {
  const detail = what ? `${what}` : `${field} cannot be expressed`;
  return badRequest(`${detail} by the upstream of route ${route} (field: ${field})`, field);
}

/** A vendor's own HTTP statuses, as the neutral kinds they mean. */
export type StatusKinds = Readonly<Record<number, ErrorKind>>;

/** What the standard statuses mean, for every vendor. */
const KIND_BY_STATUS: StatusKinds = {
  400: "invalid_request",
  401: "authentication",
  403: "permission",
  404: "not_found",
  413: "request_too_large",
  429: "rate_limit",
  503: "overloaded",
  504: "timeout",
};

/** The kind of an HTTP status: the vendor's own meaning (`own`) first, then the standard one. */
export function kindForStatus(status: number, own?: StatusKinds): ErrorKind {
  return own?.[status] ?? KIND_BY_STATUS[status] ??
    (status >= 500 ? "upstream" : "invalid_request");
}

/** How a format reads its providers' errors where the generic reading does not suffice. */
export interface ProviderErrors {
  /** Statuses of its own, outside the standard ones (a vendor's 529 meaning `overloaded`). */
  statusKinds?: StatusKinds;
  /**
   * What a provider's error body says, where the default reading (`error.message`, the kind
   * from the HTTP status) does not find it: another envelope, or a kind its status hides.
   */
  readError?(body: Record<string, unknown>): { kind?: ErrorKind; message?: string } | undefined;
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
 * Reads a provider's error body (an `error.message` envelope, or plain text and HTML) into a
 * GatewayError with the provider's status, for re-wrapping in the client's dialect. The text
 * must already be scrubbed of provider keys.
 */
export function fromProviderError(
  status: number,
  text: string,
  headers?: Headers,
  /** The provider's format's own reading of its statuses and error bodies. */
  vendor?: ProviderErrors,
): GatewayError {
  let kind = kindForStatus(status, vendor?.statusKinds);
  let message: string | undefined;
  try {
    const body = JSON.parse(text);
    const e = body?.error;
    if (e && typeof e.message === "string") message = e.message;
    const own = body && typeof body === "object" ? vendor?.readError?.(body) : undefined;
    kind = own?.kind ?? kind;
    message = (own?.message ?? message)?.slice(0, 2000);
  } catch {
    // not JSON: an excerpt of the text below
  }
  const excerpt = message === undefined ? errorExcerpt(text) : "";
  message ??= `upstream returned HTTP ${status}${excerpt ? `: ${excerpt}` : ""}`;
  return new GatewayError(status, kind, message, undefined, headers);
}
