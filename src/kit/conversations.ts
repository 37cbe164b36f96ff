/**
 * The stored-conversation service as a handler sees it (`HandlerContext.conversations`; the core
 * implements it in src/request/conversations.ts over src/state/store.ts). Every lookup is by the calling client
 * key, so a key never reads, chains or deletes another key's conversation.
 */
import type { ClientContext } from "./codec.ts";

/** One kept answer with the whole input the model saw. */
export interface StoredTurn {
  id: string;
  /** Name of the client key that made it. */
  owner: string;
  /** The input the model saw, in the format's own items (a chain's earlier turns included). */
  input: unknown[];
  /** The answer object as the client received it. */
  response: Record<string, unknown>;
}

/** The client-encoder hook that keeps a finished answer; `kept` resolves once it is stored. */
export type Keeper = Pick<ClientContext, "onAnswer"> & { kept: () => Promise<void> };

export interface Conversations {
  /** Whose records this request reads and writes: its client key's name. */
  readonly owner: string;
  /**
   * Whether the gateway keeps answers on a (converted) route: off with `store: false` on the
   * route or `response_store.enabled: false`, for operators bound to zero retention.
   */
  keeps(route: { readonly route: { readonly store?: boolean } }): boolean;
  /** The caller's own record `id`, unless it is unknown, deleted, expired or another key's. */
  read(id: string): Promise<StoredTurn | undefined>;
  /**
   * The answer of the caller's own record `id` (as `read` finds it), as the JSON text it was
   * kept as, byte for byte: what a GET of a stored answer sends, without reading the input.
   */
  readAnswer(id: string): Promise<string | undefined>;
  /** True if the caller's own record `id` was deleted. */
  forget(id: string): Promise<boolean>;
  /**
   * The hook that keeps the finished answer (with `input`, the full input the model saw)
   * unless `store` is false. A store failure never fails the answer: it is logged (without
   * content) as the request's `stored` outcome.
   */
  keeper(input: unknown[], store: boolean): Keeper;
}
