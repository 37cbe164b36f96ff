/**
 * A routed target's call through its platform (src/request/platforms.ts), shared by relayed and
 * converted attempts: the platform's binding and what the call does.
 */
import { badRequest } from "../kit/errors.ts";
import type { Operation } from "../kit/platform.ts";
import type { RequestContext } from "./context.ts";
import type { PlatformRequest } from "./platforms.ts";
import type { Resolved } from "./router.ts";

/**
 * The call to `r`'s provider through its platform, if it is on one. `operation` is a path when
 * the endpoint is none a platform serves: a target on one cannot take it (nothing is sent).
 */
export function throughPlatform(
  ctx: RequestContext,
  r: Resolved,
  json: Record<string, unknown>,
  stream: boolean,
  operation: Operation | string,
  /** The call's path on the vendor's own API. */
  path: string,
): PlatformRequest | undefined {
  const { platform } = r.provider;
  if (platform === undefined) return undefined;
  if (operation !== "generate" && operation !== "count_tokens") {
    throw badRequest(`${operation} is not served through platform ${platform} (${r.label})`);
  }
  const binding = ctx.gw.formats.platforms.bind(r.provider, ctx.gw.secrets);
  return { binding, call: { model: r.upstreamModel, operation, stream, path }, json };
}
