/**
 * `GET /v1/gateway/usage`: the caller's own windows (limit, used, remaining, reset); an admin
 * key may name another identity (`?identity=`) or ask for all (`?all=true`). Not counted, and
 * answered even when a limit is exhausted.
 */
import type { Handler } from "./context.ts";
import { GatewayError } from "../kit/errors.ts";
import type { Identity } from "../state/limits/policy.ts";
import { LIMIT_NAMES } from "../state/limits/windows.ts";

async function usageOf(gw: Parameters<Handler>[0]["gw"], identity: Identity) {
  const limits = identity.limits ?? {};
  const windows = await gw.limiter.read(identity);
  const shown = LIMIT_NAMES.filter((n) => limits[n] !== undefined).map((n) => {
    const limit = limits[n]!;
    const { used, reset } = windows[n];
    return [n, {
      limit,
      used,
      remaining: Math.max(0, limit - used),
      reset: new Date(reset).toISOString(),
    }];
  });
  return { identity: identity.name, windows: Object.fromEntries(shown) };
}

export const gatewayUsage: Handler = async ({ gw, url, identity }) => {
  const self = identity!;
  const asked = url.searchParams.get("identity");
  const all = url.searchParams.get("all") === "true";
  if ((all || (asked !== null && asked !== self.name)) && !self.admin) {
    throw new GatewayError(
      403,
      "permission",
      "only an admin key may read another identity's usage",
    );
  }
  if (all) {
    const identities = await Promise.all(gw.policy.limited().map((i) => usageOf(gw, i)));
    return Response.json({ identities });
  }
  if (asked === null || asked === self.name) return Response.json(await usageOf(gw, self));
  const other = gw.policy.named(asked);
  if (!other) {
    throw new GatewayError(404, "not_found", `no identity named ${JSON.stringify(asked)}`);
  }
  return Response.json(await usageOf(gw, other));
};
