/** Model name → route → provider. First matching route wins; patterns are `*` globs. */
import type { Config, ProviderConfig, RouteConfig } from "./config.ts";
import type { DefaultVendor } from "./format.ts";
import { GatewayError } from "./errors.ts";
import { clip } from "./model_name.ts";
import { Health } from "./failover.ts";

/** One deployment of a route, as configured. */
export interface Target {
  /** Identifies the target in balancing state: `<route index>.<target index>`. */
  id: string;
  provider: ProviderConfig;
  /** Upstream model name; undefined: the requested one. */
  model?: string;
  weight: number;
  priority: number;
  /** `Resolved.label` when sending to this target (built once, not per request). */
  label: string;
}

export interface Resolved {
  route: RouteConfig;
  /** The target this resolution sends to (first: the primary). */
  provider: ProviderConfig;
  /** Model name to send upstream. */
  upstreamModel: string;
  /** The model the client asked for. */
  requested: string;
  /** Every target of the route, by priority (the primary first). */
  targets: Target[];
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
  private readonly table: { patterns: RegExp[]; route: RouteConfig; targets: Target[] }[];

  /**
   * `health` is the balancing and cooldown state; a reload passes the old one on, so providers
   * that still exist keep their cooldowns (it is keyed by provider name).
   */
  constructor(
    private readonly config: Config,
    readonly health = new Health(),
    /** The format plugins' default vendors, named in the hint of an unserved model's 404. */
    private readonly vendors: readonly DefaultVendor[] = [],
  ) {
    const providers = new Map(config.providers.map((p) => [p.name, p]));
    this.table = config.routes.map((route, i) => {
      const targets = (route.targets ?? [{ provider: route.provider!, weight: 1 }])
        .map((t, j) => {
          const provider = providers.get(t.provider)!;
          return {
            id: `${i}.${j}`,
            provider,
            model: t.model ?? route.model,
            weight: t.weight,
            // `balance: weighted` puts every target in one priority.
            priority: route.balance === "weighted" ? 0 : t.priority ?? j,
            label: `"${route.models.join(",")}" → ${provider.name} (${provider.api})`,
          };
        })
        // Stable: equal priorities keep their list order.
        .sort((a, b) => a.priority - b.priority);
      return { patterns: route.models.map(globToRegExp), route, targets };
    });
  }

  resolve(model: string): Resolved {
    for (const { patterns, route, targets } of this.table) {
      if (patterns.some((p) => p.test(model))) {
        return retarget({ route, targets, name: route.name ?? route.models[0] }, targets[0], model);
      }
    }
    throw new GatewayError(404, "model_not_found", this.notServed(model), "model");
  }

  /** Says what is served and how to enable the real providers (names env vars, never keys). */
  private notServed(model: string): string {
    const served = this.config.routes.flatMap((r) => r.models);
    const vendor = this.vendors.find((v) => v.models.some((m) => globToRegExp(m).test(model)));
    const hints = (vendor ? [vendor] : this.vendors)
      .filter((v) => !v.models.every((m) => served.includes(m)))
      .map((v) => `${v.env}_API_KEY (${v.models.join(", ")})`);
    const enable = hints.length
      ? ` For the real providers set ${hints.join(" or ")} (built-in config) or add a route.`
      : "";
    return `model "${clip(model)}" is not served by this gateway (no route matches it). ` +
      `Served: ${served.join(", ")}.${enable}`;
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
        if (!id.includes("*") && !out.has(id)) {
          out.set(id, { id, owned_by: r.provider ?? r.targets![0].provider });
        }
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

/** The resolution of a request's model sent to `target` of the same route. */
export function retarget(
  r: Pick<Resolved, "route" | "targets" | "name">,
  target: Target,
  model: string,
): Resolved {
  return {
    route: r.route,
    targets: r.targets,
    name: r.name,
    requested: model,
    provider: target.provider,
    upstreamModel: target.model ?? model,
    label: target.label,
  };
}
