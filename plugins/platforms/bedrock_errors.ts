/**
 * Amazon Bedrock's errors, shared by everything Bedrock answers (Converse, InvokeModel): an
 * exception name — the `x-amzn-errortype` header, a body's `__type`, or an event-stream
 * exception frame's `:exception-type` — as a neutral kind and status, and the error body's text.
 */
import type { ErrorKind } from "../../src/contract/errors.ts";

type Obj = Record<string, unknown>;

/** By exception name, lower-cased (exception frames write the first letter in lower case). */
const EXCEPTIONS: Record<string, { status: number; kind: ErrorKind }> = {
  throttlingexception: { status: 429, kind: "rate_limit" },
  servicequotaexceededexception: { status: 429, kind: "rate_limit" },
  serviceunavailableexception: { status: 503, kind: "overloaded" },
  modelnotreadyexception: { status: 503, kind: "overloaded" },
  modelstreamerrorexception: { status: 424, kind: "overloaded" },
  internalserverexception: { status: 500, kind: "upstream" },
  modeltimeoutexception: { status: 504, kind: "timeout" },
  validationexception: { status: 400, kind: "invalid_request" },
  modelerrorexception: { status: 424, kind: "upstream" },
  resourcenotfoundexception: { status: 404, kind: "model_not_found" },
  accessdeniedexception: { status: 403, kind: "permission" },
  unrecognizedclientexception: { status: 403, kind: "authentication" },
};

/**
 * An exception name (`ThrottlingException:http://internal.amazon.com/…`, a `__type` of
 * `com.amazon.bedrock#ValidationException`, `throttlingException`) as a kind and status.
 */
export function exceptionOf(name: string): { status: number; kind: ErrorKind } | undefined {
  const bare = name.split(":")[0].split("#").at(-1)!;
  return EXCEPTIONS[bare.toLowerCase()];
}

/** An exception of a type not listed (Bedrock adds them): a failure of the upstream. */
export const UNKNOWN_EXCEPTION = { status: 500, kind: "upstream" as const };

/**
 * A Bedrock error body: `{"message"}` (or `Message`), the exception named by `__type` when the
 * body carries it (the `x-amzn-errortype` header names it otherwise).
 */
export function readBedrockError(
  body: Obj,
  errorType?: string | null,
): { kind?: ErrorKind; message?: string } | undefined {
  const message = body.message ?? body.Message;
  const name = typeof body.__type === "string" ? body.__type : errorType ?? "";
  const kind = exceptionOf(name)?.kind;
  if (typeof message !== "string" && !kind) return undefined;
  return { kind, message: typeof message === "string" ? message : undefined };
}
