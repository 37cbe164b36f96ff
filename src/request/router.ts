/** Model name → route → provider. First matching route wins; patterns are `*` globs. */
import { globToRegExp } from "../config/glob.ts";
import type { Config, ProviderConfig, RouteConfig } from "../config/config.ts";
import type { DefaultVendor, ListedModel } from "../kit/format.ts";
import type { Route } from "../kit/route.ts";
import { GatewayError } from "../kit/errors.ts";
import { clip } from "../kit/model_name.ts";
import { Health } from "../state/health.ts";

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

/**
 * A model's route as the core reads it: the contract's `Route` (what a handler may read) with
 * every target's balancing id, the model sent upstream and the route's metric name. A handler
 * gets one from `ctx.route` and may hand it back; `resolvedOf` takes it back checked.
 */
export class Resolved implements Route {
  /** The target this resolution sends to (first: the primary). */
  readonly provider: ProviderConfig;
  /** Model name to send upstream. */
  readonly upstreamModel: string;
  /** Describes the route in messages and logs, e.g. `"claude-*" → anthropic (messages)`. */
  readonly label: string;

  constructor(
    readonly route: RouteConfig,
    /** Every target of the route, by priority (the primary first). */
    readonly targets: readonly Target[],
    /** The route's `name`, or its first model pattern: a metric label. */
    readonly name: string,
    /** The model the client asked for. */
    readonly requested: string,
    target: Target = targets[0],
  ) {
    this.provider = target.provider;
    this.upstreamModel = target.model ?? requested;
    this.label = target.label;
  }

  /** The same request sent to another target of the route. */
  to(target: Target): Resolved {
    return new Resolved(this.route, this.targets, this.name, this.requested, target);
  }
}

/**
 * The core's own route from one a handler hands back (`ctx.generate`, `ctx.relay`,
 * `ctx.events`, a socket's `relay`): handlers get routes only from `ctx.route`, so only a
 * plugin that made one up is refused.
 */
export function resolvedOf(route: Route): Resolved {
  if (route instanceof Resolved) return route;
  throw new TypeError(`a route the core did not resolve: ${route.label}`);
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
    /**
     * The default vendors the hint of an unserved model's 404 names (their env keys): only under
     * the built-in config, which reads those keys.
     */
    readonly vendors: readonly DefaultVendor[] = [],
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
        return new Resolved(route, targets, route.name ?? route.models[0], model);
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
      : this.vendors.length === 0
      ? " Add a route for it to the config file."
      : "";
    return `model "${clip(model)}" is not served by this gateway (no route matches it). ` +
      `Served: ${served.join(", ")}.${enable}`;
  }

  /**
   * The model lists, in config order: route names without a `*`; for a pattern route, the ids
   * its providers report (`reported`; those every target's provider reports that the route's
   * patterns match and no earlier route takes); then the `catalog` (a catalog entry adds its
   * limits to the same id). A route that renames the model lists no provider ids: they are not
   * what its clients call. The owner is the provider that serves the id.
   */
  models(reported: (p: ProviderConfig) => readonly string[] | undefined): ListedModel[] {
    const out = new Map<string, ListedModel>();
    const add = (id: string, owned_by: string) => {
      if (!out.has(id)) out.set(id, { id, owned_by });
    };
    for (const { patterns, route, targets } of this.table) {
      const owner = targets[0].provider.name;
      for (const id of route.models) if (!id.includes("*")) add(id, owner);
      if (targets.some((t) => t.model !== undefined)) continue;
      for (const id of commonIds(targets.map((t) => reported(t.provider)))) {
        if (patterns.some((p) => p.test(id)) && this.routeOf(id) === route) add(id, owner);
      }
    }
    for (const c of this.config.catalog) {
      const route = this.routeOf(c.id);
      // config validation already refuses a catalog id no route serves
      if (!route) continue;
      out.set(c.id, { ...out.get(c.id), ...c, owned_by: this.resolve(c.id).provider.name });
    }
    return [...out.values()];
  }

  /** The route a model name resolves to (the first whose patterns match), if any. */
  private routeOf(model: string): RouteConfig | undefined {
    return this.table.find(({ patterns }) => patterns.some((p) => p.test(model)))?.route;
  }
}

/** The ids in every list that is known (none known: none). */
function commonIds(lists: (readonly string[] | undefined)[]): string[] {
  const known = lists.filter((l) => l !== undefined);
  if (known.length === 0) return [];
  return known[0].filter((id) => known.every((l) => l.includes(id)));
}

/** A model's route and its catalog context window: what Codex's settings are printed from. */
export function modelSettings(config: Config, model: string) {
  const route = new Router(config).resolve(model);
  const contextWindow = config.catalog.find((c) => c.id === model)?.context_window;
  return { route, contextWindow };
}
