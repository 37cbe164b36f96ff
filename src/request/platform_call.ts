/**
 * A routed target's call through its platform (src/request/platforms.ts), shared by relayed and
 * converted attempts: the platform's binding and what the call does.
 */
import { badRequest } from "../kit/errors.ts";
import { DEFAULT_OPERATIONS, type Operation } from "../kit/platform.ts";
import type { RequestContext } from "./context.ts";
import type { PlatformRequest } from "./platforms.ts";
import type { Resolved } from "./router.ts";

/**
 * What a call does: an operation platforms may serve, or an endpoint none serves (`unserved`,
 * its path). A target on a platform that does not serve it refuses the call (nothing is sent).
 */
type CallOperation = Operation | { readonly unserved: string };

/** The call to `r`'s provider through its platform, if it is on one. */
export function throughPlatform(
  ctx: RequestContext,
  r: Resolved,
  json: Record<string, unknown>,
  stream: boolean,
  operation: CallOperation,
  /** The call's path on the vendor's own API. */
  path: string,
): PlatformRequest | undefined {
  if (r.provider.platform === undefined) return undefined;
  if (typeof operation === "object") throw notServed(operation.unserved, r);
  const binding = ctx.gw.formats.platforms.bind(r.provider, ctx.gw.secrets);
  if (!(binding.platform.address.operations ?? DEFAULT_OPERATIONS).includes(operation)) {
    throw notServed(path, r);
  }
  return { binding, call: { model: r.upstreamModel, operation, stream, path }, json };
}

/** A call its target's platform does not serve: the client's 400, naming the path. */
function notServed(path: string, r: Resolved) {
  return badRequest(`${path} is not served through platform ${r.provider.platform} (${r.label})`);
}
