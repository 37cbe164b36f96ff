/**
 * The stored-conversation service the format plugins share (src/store.ts keeps the records):
 * whether a converted route keeps answers, keeping a finished answer with the input the model
 * saw, and reading or forgetting one by id. Every lookup is by the calling client key, so a key
 * never reads, chains or deletes another key's conversation. Nothing stored is logged: the
 * access log gets only the outcome (`stored`).
 */
import type { ClientContext } from "./contract/codec.ts";
import type { RequestContext } from "./context.ts";
import type { Resolved } from "./router.ts";
import type { StoredTurn } from "./store.ts";

/**
 * Whether the gateway keeps answers on this (converted) route: off with `store: false` on the
 * route or `response_store.enabled: false`, for operators bound to zero retention.
 */
export const keepsConversations = (ctx: RequestContext, r: Resolved): boolean =>
  ctx.gw.config.response_store.enabled && r.route.store !== false;

/** Whose records a request reads and writes: its client key's name. */
export const owner = (ctx: RequestContext): string => ctx.trace.key ?? "";

/** The caller's own record `id`, unless it is unknown, deleted, expired or another key's. */
export const readTurn = (ctx: RequestContext, id: string): Promise<StoredTurn | undefined> =>
  ctx.gw.store.get(id, owner(ctx));

/** True if the caller's own record `id` was deleted. */
export const forgetTurn = (ctx: RequestContext, id: string): Promise<boolean> =>
  ctx.gw.store.delete(id, owner(ctx));

/**
 * The client-encoder hook that keeps the finished answer (with `input`, the full input the
 * model saw) unless `store` is false. A store failure never fails the answer: it is logged
 * (without content) as the request's `stored` outcome. `kept` resolves once it is stored.
 */
export function keeper(
  ctx: RequestContext,
  input: unknown[],
  store: boolean,
): Pick<ClientContext, "onAnswer"> & { kept: () => Promise<void> } {
  let pending: Promise<void> = Promise.resolve();
  if (!store) {
    ctx.trace.stored = "off";
    return { kept: () => pending };
  }
  const onAnswer = (answer: Record<string, unknown>) => {
    const record: StoredTurn = {
      id: String(answer.id),
      owner: owner(ctx),
      input,
      response: answer,
    };
    pending = ctx.gw.store.put(record).then(
      (outcome) => {
        ctx.trace.stored = outcome;
      },
      () => {
        ctx.trace.stored = "failed";
      },
    );
    return pending;
  };
  return { onAnswer, kept: () => pending };
}
