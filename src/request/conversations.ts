/**
 * The stored-conversation service the format plugins share (`HandlerContext.conversations`,
 * src/kit/conversations.ts), over the gateway's store (src/state/store.ts): whether a converted
 * route keeps answers, keeping a finished answer with the input the model saw, and reading or
 * forgetting one by id, always as the calling client key. Nothing stored is logged: the access
 * log gets only the outcome (`stored`).
 */
import type { Conversations, Keeper, StoredTurn } from "../kit/conversations.ts";
import type { RequestContext } from "./context.ts";

/** One request's view of the stored conversations. */
export class RequestConversations implements Conversations {
  constructor(private readonly ctx: Pick<RequestContext, "gw" | "trace">) {}

  get owner(): string {
    return this.ctx.trace.key ?? "";
  }

  keeps(r: { readonly route: { readonly store?: boolean } }): boolean {
    return this.ctx.gw.config.response_store.enabled && r.route.store !== false;
  }

  read(id: string): Promise<StoredTurn | undefined> {
    return this.ctx.gw.store.get(id, this.owner);
  }

  readAnswer(id: string): Promise<string | undefined> {
    return this.ctx.gw.store.answer(id, this.owner);
  }

  forget(id: string): Promise<boolean> {
    return this.ctx.gw.store.delete(id, this.owner);
  }

  keeper(input: unknown[], store: boolean): Keeper {
    const { ctx } = this;
    let pending: Promise<void> = Promise.resolve();
    if (!store) {
      ctx.trace.stored = "off";
      return { kept: () => pending };
    }
    const onAnswer = (answer: Record<string, unknown>) => {
      const record: StoredTurn = {
        id: String(answer.id),
        owner: this.owner,
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
}
