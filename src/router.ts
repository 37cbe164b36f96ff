/** Model name → route → provider. First matching route wins; patterns are `*` globs. */
import type { Config, ProviderConfig, RouteConfig } from "./config.ts";
import { GatewayError } from "./errors.ts";

export interface Resolved {
  route: RouteConfig;
  provider: ProviderConfig;
  /** Model name to send upstream. */
  upstreamModel: string;
  /** Describes the route in messages and logs, e.g. `"claude-*" → anthropic (messages)`. */
  label: string;
}

function globToRegExp(glob: string): RegExp {
  const body = glob.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*");
  // `s`: a newline in a model name must not slip past a `*` into "no route".
  return new RegExp(`^${body}$`, "s");
}

export class Router {
  private readonly table: { patterns: RegExp[]; route: RouteConfig; provider: ProviderConfig }[];

  constructor(private readonly config: Config) {
    const providers = new Map(config.providers.map((p) => [p.name, p]));
    this.table = config.routes.map((route) => ({
      patterns: route.models.map(globToRegExp),
      route,
      provider: providers.get(route.provider)!,
    }));
  }

  resolve(model: string): Resolved {
    for (const { patterns, route, provider } of this.table) {
      if (patterns.some((p) => p.test(model))) {
        return {
          route,
          provider,
          upstreamModel: route.model ?? model,
          label: `"${route.models.join(",")}" → ${provider.name} (${provider.api})`,
        };
      }
    }
    throw new GatewayError(
      404,
      "model_not_found",
      `model "${model}" is not served by this gateway (no route matches it)`,
      "model",
    );
  }

  /** Model ids for GET /v1/models: every configured pattern, owned by its provider. */
  models(): { id: string; owned_by: string }[] {
    return this.config.routes.flatMap((r) => r.models.map((id) => ({ id, owned_by: r.provider })));
  }
}
