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
  /** The route's `name`, or its first model pattern: a metric label. */
  name: string;
}

export interface ListedModel {
  id: string;
  owned_by: string;
  display_name?: string;
  context_window?: number;
  max_output_tokens?: number;
}

export function globToRegExp(glob: string): RegExp {
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
          name: route.name ?? route.models[0],
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

  /**
   * Concrete model ids for the model lists, in config order: route names without a `*`, then
   * the `catalog` (the names behind pattern routes). A catalog entry adds its limits to the
   * same id; the provider is the one that serves the id.
   */
  models(): ListedModel[] {
    const out = new Map<string, ListedModel>();
    for (const r of this.config.routes) {
      for (const id of r.models) {
        if (!id.includes("*") && !out.has(id)) out.set(id, { id, owned_by: r.provider });
      }
    }
    for (const c of this.config.catalog) {
      let owner: string;
      try {
        owner = this.resolve(c.id).provider.name;
      } catch {
        continue; // config validation already refuses a catalog id no route serves
      }
      out.set(c.id, { ...out.get(c.id), ...c, owned_by: owner });
    }
    return [...out.values()];
  }
}
