/**
 * The formats a gateway serves: one registry the core asks about endpoints, dialects, codecs
 * and upstream rules, so no core module knows any format by name. `C` is the request context
 * handlers take; the core's own endpoints are handed in (src/request/formats.ts), so this module
 * depends on no handler.
 */
import type { Codec } from "../kit/codec.ts";
import { GatewayError } from "../kit/errors.ts";
import { DEMO_API } from "../config/config.ts";
import type {
  DefaultVendor,
  Dialect,
  EndpointSpec,
  FormatPlugin,
  UpstreamSpec,
} from "../kit/format.ts";
import type { AnyPlatform } from "../kit/platform.ts";
import { Platforms } from "./platforms.ts";

/** An endpoint as the server dispatches it: with the dialect its errors and key speak. */
export interface Endpoint<C> extends EndpointSpec<C> {
  dialect: Dialect;
  /** Where the key may be: the dialects tried in order (a path shared by formats takes each). */
  keyDialects: readonly Dialect[];
}

/** Client headers any relayed call forwards, whatever the format. */
const FORWARD_HEADERS = ["user-agent", "idempotency-key", "x-client-request-id"];

/** Provider response headers any relay passes back (ids, rate limits, retry hints). */
const RESPONSE_HEADERS = [
  "content-type",
  "request-id",
  "x-request-id",
  "retry-after",
  "retry-after-ms",
  "x-should-retry",
  "x-ratelimit-",
];

/**
 * An allow-list without its rate-limit entries (`x-ratelimit-`, a format's own such as
 * `anthropic-ratelimit-`). Chosen once per list, so a limited answer costs no header scan.
 */
function withoutRateLimits(allow: readonly string[]): string[] {
  return allow.filter((name) => !name.includes("ratelimit-"));
}

const RESPONSE_HEADERS_LIMITED = withoutRateLimits(RESPONSE_HEADERS);

type HeaderLists = { forward: string[]; response: string[]; limited: string[] };

/** Distinct paths whose matches are remembered (Gemini paths carry model names: bounded). */
const REMEMBERED_PATHS = 1024;

/** A format that clients speak: it has a dialect. */
export type ClientFormat<C> = FormatPlugin<C> & { dialect: Dialect };

export class FormatRegistry<C> {
  readonly endpoints: readonly Endpoint<C>[];
  /** The formats clients speak (all but the upstream-only ones), in registry order. */
  readonly clients: readonly ClientFormat<C>[];
  private readonly byPath = new Map<string, readonly Endpoint<C>[]>();
  private readonly dialectByPath = new Map<string, Dialect>();
  private readonly byId = new Map<string, FormatPlugin<C>>();
  private readonly headers = new Map<string, HeaderLists>();

  /** The platforms providers may be reached through (`platform:`). */
  readonly platforms: Platforms;

  constructor(
    readonly plugins: readonly FormatPlugin<C>[],
    /** The core's own endpoints, given the registry of the plugins (whose dialects they speak). */
    core: (registry: FormatRegistry<C>) => Endpoint<C>[],
    platforms: readonly AnyPlatform[] = [],
  ) {
    if (plugins.length === 0) throw new Error("a gateway needs at least one format plugin");
    const taken = new Set<string>([DEMO_API]);
    for (const p of plugins) {
      if (taken.has(p.id)) throw new Error(`format id "${p.id}" is taken`);
      taken.add(p.id);
      // A format only clients speak is no provider api.
      if (!p.upstream) continue;
      this.byId.set(p.id, p);
      const response = [...RESPONSE_HEADERS, ...p.upstream.responseHeaders ?? []];
      this.headers.set(p.id, {
        forward: [...FORWARD_HEADERS, ...p.upstream.forwardHeaders ?? []],
        response,
        limited: withoutRateLimits(response),
      });
    }
    this.clients = plugins.filter((p): p is ClientFormat<C> => p.dialect !== undefined);
    const upstreamOnly = plugins.find((p) =>
      !p.dialect && (p.endpoints.length || p.paths.length || p.models)
    );
    if (upstreamOnly) {
      throw new Error(`format "${upstreamOnly.id}" serves clients but has no dialect`);
    }
    for (const p of plugins.filter((p) => !p.upstream)) {
      if (!p.dialect) throw new Error(`format "${p.id}" has neither a dialect nor an upstream`);
      if (!this.byId.has(p.codec.api)) {
        throw new Error(`format "${p.id}" carries api "${p.codec.api}", which no format serves`);
      }
    }
    if (this.clients.length === 0) throw new Error("a gateway needs a format that clients speak");
    this.endpoints = [
      ...this.clients.flatMap((p) =>
        p.endpoints.map((e) => ({ ...e, dialect: p.dialect, keyDialects: [p.dialect] }))
      ),
      ...core(this),
    ];
    this.platforms = new Platforms(platforms, [...taken]);
    const names = this.endpoints.map((e) => e.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new Error(`endpoint name "${twice}" is declared twice`);
  }

  /** The first client format's: paths no plugin claims (health, unknown ones) speak it. */
  get defaultDialect(): Dialect {
    return this.clients[0].dialect;
  }

  /** The provider apis a config may name (formats only clients speak are none). */
  get ids(): string[] {
    return [...this.byId.keys(), DEMO_API];
  }

  get(api: string): FormatPlugin<C> | undefined {
    return this.byId.get(api);
  }

  /** The codec of a configured provider api (config validation has checked it exists). */
  codec(api: string): Codec {
    const p = this.byId.get(api);
    if (!p) throw new GatewayError(500, "upstream", `no format plugin serves api "${api}"`);
    return p.codec;
  }

  /** The family of an api's signatures; none for the local demo. */
  family(api: string): string | undefined {
    return this.byId.get(api)?.family;
  }

  upstream(api: string): UpstreamSpec | undefined {
    return this.byId.get(api)?.upstream;
  }

  /** Client headers a relay to `api` forwards. */
  forwardHeaders(api: string): readonly string[] {
    return this.headers.get(api)?.forward ?? FORWARD_HEADERS;
  }

  /**
   * Provider headers a relay from `api` passes back. To a `limited` identity (one the gateway
   * answers with its own rate-limit headers) none that describe the provider account's limits.
   */
  responseHeaders(api: string, limited = false): readonly string[] {
    const lists = this.headers.get(api);
    if (!lists) return limited ? RESPONSE_HEADERS_LIMITED : RESPONSE_HEADERS;
    return limited ? lists.limited : lists.response;
  }

  /** The endpoints whose pattern matches `path` (remembered: a path's matches never change). */
  matching(path: string): readonly Endpoint<C>[] {
    let found = this.byPath.get(path);
    if (!found) {
      found = this.endpoints.filter((e) => e.pattern.test(path));
      if (this.byPath.size >= REMEMBERED_PATHS) this.byPath.clear();
      this.byPath.set(path, found);
    }
    return found;
  }

  /** The dialect of any path, matched or not: the longest claimed prefix, else the default. */
  dialectOf(path: string): Dialect {
    let dialect = this.dialectByPath.get(path);
    if (!dialect) {
      let length = -1;
      for (const p of this.clients) {
        for (const prefix of p.paths) {
          if (path.startsWith(prefix) && prefix.length > length) {
            dialect = p.dialect;
            length = prefix.length;
          }
        }
      }
      dialect ??= this.defaultDialect;
      if (this.dialectByPath.size >= REMEMBERED_PATHS) this.dialectByPath.clear();
      this.dialectByPath.set(path, dialect);
    }
    return dialect;
  }

  /** The plugins' default vendors, each with the api its provider is configured with. */
  get vendors(): (DefaultVendor & { api: string })[] {
    return this.providerFormats.flatMap((
      p,
    ) => (p.defaultVendor ? [{ ...p.defaultVendor, api: p.id }] : []));
  }

  /** The formats providers speak (all but those only clients speak), in registry order. */
  get providerFormats(): FormatPlugin<C>[] {
    return [...this.byId.values()];
  }
}
