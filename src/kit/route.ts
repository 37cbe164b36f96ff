/** The route a model resolves to, as the contract lets a plugin read it. */

/** A provider as a handler sees it. */
export interface RouteProvider {
  readonly name: string;
  /** The format its API speaks (a plugin id). */
  readonly api: string;
  /** The cloud platform it is reached through, if any (platforms take HTTP calls only). */
  readonly platform?: string;
}

/** The route a model resolved to, as far as a handler may read it. */
export interface Route {
  /** The model the client asked for. */
  readonly requested: string;
  /** The first target's provider. */
  readonly provider: RouteProvider;
  readonly targets: readonly { readonly provider: RouteProvider }[];
  /** Describes the route in messages, e.g. `"claude-*" → anthropic (messages)`. */
  readonly label: string;
  /** The route's own switches (config `routes[]`). */
  readonly route: {
    readonly passthrough: boolean;
    readonly store?: boolean;
    readonly compact?: boolean;
    readonly hosted_tools?: "map" | "drop" | "reject";
  };
}
