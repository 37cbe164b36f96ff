import type { GatewayError } from "../kit/errors.ts";
import type { Dialect } from "../kit/format.ts";

/** The error response of `dialect` for an error, with the status its SDKs must see. */
export function errorResponse(dialect: Dialect, err: GatewayError, requestId?: string): Response {
  const res = Response.json(dialect.errorBody(err, requestId), {
    status: dialect.status?.(err.status) ?? err.status,
    headers: err.headers,
  });
  for (const [name, value] of dialect.errorHeaders?.(err) ?? []) res.headers.set(name, value);
  return res;
}
