/**
 * The formats a gateway serves, as handed to it by `main.ts`: the plugins' registry with the
 * core's own endpoints beside theirs (model lists, usage, root, health).
 */
import type { Handler, Plugin, RequestContext } from "./context.ts";
import type { Dialect, ModelListing } from "../kit/format.ts";
import type { AnyPlatform } from "../kit/platform.ts";
import { gatewayUsage } from "./gateway_usage.ts";
import { healthz, modelById, modelList, readyz, root } from "./gateway_endpoints.ts";
import { type ClientFormat, type Endpoint as EndpointOf, FormatRegistry } from "./registry.ts";

/** An endpoint as the server dispatches it: with the dialect its errors and key speak. */
export type Endpoint = EndpointOf<RequestContext>;

export class Formats extends FormatRegistry<RequestContext> {
  constructor(plugins: readonly Plugin[], platforms: readonly AnyPlatform[] = []) {
    super(plugins, coreEndpoints, platforms);
  }
}

function coreEndpoints(formats: FormatRegistry<RequestContext>): Endpoint[] {
  const { clients, defaultDialect } = formats;
  // Every client auth the gateway accepts.
  const everyAuth = [...new Set(clients.map((p) => p.dialect))];
  return [
    ...modelListEndpoints(clients, everyAuth),
    {
      name: "gateway_usage",
      method: "GET",
      pattern: /^\/v1\/gateway\/usage$/,
      example: "/v1/gateway/usage",
      handler: gatewayUsage,
      dialect: formats.dialectOf("/v1/gateway/usage"),
      keyDialects: everyAuth,
    },
    {
      name: "root",
      method: "GET",
      pattern: /^\/$/,
      example: "/",
      handler: root,
      keyless: true,
      dialect: defaultDialect,
      keyDialects: [],
    },
    ...[["healthz", healthz], ["readyz", readyz]].map(([name, handler]) => ({
      name: name as string,
      method: "GET" as const,
      pattern: new RegExp(`^/${name}$`),
      example: `/${name}`,
      handler: handler as Handler,
      internal: true,
      dialect: defaultDialect,
      keyDialects: [],
    })),
  ];
}

/**
 * The list and one-model endpoints of every path some format lists models at. They take every
 * client auth (`everyAuth`): a format may send its clients to another's list (Gemini's
 * `listedAt`), and a model list is no one format's secret.
 */
function modelListEndpoints(
  plugins: readonly ClientFormat<RequestContext>[],
  everyAuth: readonly Dialect[],
): Endpoint[] {
  const byPath = Map.groupBy(
    plugins.filter((p) => p.models),
    (p) => p.models!.path,
  );
  return [...byPath].flatMap(([path, owners], i) => {
    const named = owners.map((p) => p.models!.name).find((n) => n !== undefined);
    const name = named ?? (i === 0 ? "models" : `${owners[0].id}_models`);
    const listings = owners.map((p) => ({ listing: p.models!, dialect: p.dialect }));
    // Formats whose listing claims its callers first; the one that claims nothing answers the
    // rest (and its dialect the errors). A claiming format's clients may send another's key too.
    const claiming = listings.filter((l) => l.listing.claims);
    const fallback = listings.find((l) => !l.listing.claims) ?? listings[0];
    const pick = (req: Request): { listing: ModelListing; dialect: Dialect } =>
      claiming.find((l) => l.listing.claims!(req)) ?? fallback;
    const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const base = {
      method: "GET" as const,
      dialect: fallback.dialect,
      // The listing formats' auth first: a key found there picks the listing's shape.
      keyDialects: [
        ...new Set([
          ...[...claiming, ...listings.filter((l) => !claiming.includes(l))].map((l) => l.dialect),
          ...everyAuth,
        ]),
      ],
    };
    return [
      {
        ...base,
        name,
        pattern: new RegExp(`^${escaped}$`),
        example: path,
        handler: modelList(pick),
      },
      {
        ...base,
        name: name.replace(/s$/, ""),
        pattern: new RegExp(`^${escaped}/[^/]+$`),
        example: `${path}/example-model`,
        handler: modelById(path, pick),
      },
    ];
  });
}
