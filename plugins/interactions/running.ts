/**
 * Interactions still streaming on this instance, for POST /v1beta/interactions/{id}/cancel.
 * Cancelling ends the upstream call as a client leaving does, then ends the client's stream with
 * `interaction.completed` in status `cancelled`; a cancelled interaction is not kept.
 */
import { badRequest } from "../../src/kit/errors.ts";
import type { PluginHandler } from "../../src/kit/handler.ts";
import { formatSse } from "../../src/kit/sse.ts";
import { interactionEvent } from "./encode_stream.ts";
import { idFromPath, notFound, ownInteraction } from "./stored.ts";

type Obj = Record<string, unknown>;

interface Running {
  owner: string;
  /** The resource as a cancel answers it: id, model, status `cancelled`. */
  cancelled: Obj;
  cancel(): Promise<void>;
}

const running = new Map<string, Running>();

/**
 * The streamed answer `res` of interaction `id`, cancellable until it ends. `head` is the
 * resource's id and model.
 */
export function cancellable(res: Response, head: Obj, ownerName: string): Response {
  if (!res.ok || !res.body) return res;
  const id = String(head.id);
  const cancelled = { ...head, object: "interaction", status: "cancelled" };
  const reader = res.body.getReader();
  const encoder = new TextEncoder();
  let out!: ReadableStreamDefaultController<Uint8Array>;
  let over = false;
  const end = () => {
    over = true;
    running.delete(id);
  };
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (out = c),
    async pull(c) {
      const chunk = await reader.read().catch((e) => {
        end();
        throw e;
      });
      if (over) return; // cancelled while reading: cancel ended the stream
      if (chunk.done) {
        end();
        return c.close();
      }
      c.enqueue(chunk.value);
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  running.set(id, {
    owner: ownerName,
    cancelled,
    async cancel() {
      end();
      await reader.cancel("the interaction was cancelled");
      const completed = interactionEvent("interaction.completed", { interaction: cancelled });
      out.enqueue(encoder.encode(formatSse(completed)));
      out.close();
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

/**
 * POST /v1beta/interactions/{id}/cancel: the caller's own interaction still streaming here is
 * cancelled (answered as `cancelled`); one that has ended is a 400, any other id a 404.
 */
export const cancelInteraction: PluginHandler = async (ctx) => {
  const id = idFromPath(ctx);
  const run = running.get(id);
  if (run?.owner === ctx.conversations.owner) {
    await run.cancel();
    return Response.json(run.cancelled);
  }
  if (await ownInteraction(ctx, id)) {
    throw badRequest(
      `interaction '${id}' is not running: only an interaction still streaming can be cancelled`,
      "id",
    );
  }
  throw notFound(id);
};
