/**
 * Stored interactions on routes where the gateway builds the `Interaction` itself, on the core's
 * stored-conversation service (`ctx.conversations`): the ids it makes, `previous_interaction_id`
 * expanded into the stored chain's steps, and GET / DELETE /v1beta/interactions/{id} (GET with
 * `?stream=true` replays the interaction as its event stream). Every lookup is by the calling
 * client key: another key's interaction is not found.
 */
import { badRequest, GatewayError } from "../../src/kit/errors.ts";
import type { StoredTurn } from "../../src/kit/conversations.ts";
import type { HandlerContext, PluginHandler, Route } from "../../src/kit/handler.ts";
import { formatSse } from "../../src/kit/sse.ts";
import { decodePathSegment, JSON_HEADERS, STREAM_HEADERS } from "../../src/kit/http.ts";
import { interactionEvent } from "./encode_stream.ts";
import { type InteractionsRequest, isContentType } from "./schema.ts";

type Obj = Record<string, unknown>;

/** The ids this gateway makes; Responses' are `resp_…`, so neither format reads the other's. */
const ID = /^int_[0-9a-f]{32}$/;

/** A fresh id for an interaction the gateway answers (never derived from the client). */
export const newInteractionId = (): string => `int_${crypto.randomUUID().replaceAll("-", "")}`;

/**
 * Unknown, deleted, expired, not kept (`store: false`) or another key's: Google's 404. An id
 * not of the gateway's shape was never kept here (unkept, or a relayed route's): said so.
 */
export function notFound(id: string, field?: string): GatewayError {
  const foreign = ID.test(id) ? "" : ": the gateway's kept interactions have ids int_…; " +
    "this one was not kept here (store: false, or made by a provider)";
  return new GatewayError(
    404,
    "not_found",
    `interaction '${id.slice(0, 64)}' not found${foreign}`,
    field,
  );
}

/** The caller's own stored interaction, if `id` names one. */
export async function ownInteraction(
  ctx: HandlerContext,
  id: string,
): Promise<StoredTurn | undefined> {
  return ID.test(id) ? await ctx.conversations.read(id) : undefined;
}

/** The request's `input` as steps: text or content blocks are one `user_input` step. */
export function inputSteps(input: InteractionsRequest["input"]): Obj[] {
  if (input === undefined) return [];
  if (typeof input === "string") {
    return [{ type: "user_input", content: [{ type: "text", text: input }] }];
  }
  const items = (Array.isArray(input) ? input : [input]) as Obj[];
  if (items.length && !isContentType(items[0].type as string)) return items;
  return items.length ? [{ type: "user_input", content: items }] : [];
}

/**
 * The steps a request continues (the stored chain's input, then its answer); none without
 * `previous_interaction_id`. A route that keeps nothing has nothing to continue: a 400 saying so.
 */
export async function storedChain(
  ctx: HandlerContext,
  r: Route,
  previousId: string | undefined,
): Promise<unknown[]> {
  if (previousId === undefined) return [];
  if (!ctx.conversations.keeps(r)) {
    throw badRequest(
      "previous_interaction_id: this route keeps no interactions (store: false)",
      "previous_interaction_id",
    );
  }
  const prev = await ownInteraction(ctx, previousId);
  if (!prev) throw notFound(previousId, "previous_interaction_id");
  return [...prev.input, ...(prev.response.steps as unknown[] ?? [])];
}

/** The `{id}` of `/v1beta/interactions/{id}[/…]`. */
export const idFromPath = (ctx: HandlerContext): string =>
  decodePathSegment(ctx.url.pathname.split("/")[3] ?? "", "id");

/** GET /v1beta/interactions/{id}: the resource, or with `?stream=true` its events replayed. */
export const getInteraction: PluginHandler = async (ctx) => {
  const id = idFromPath(ctx);
  const q = ctx.url.searchParams;
  const stream = flag(q.get("stream"), "stream");
  const after = q.get("last_event_id");
  if (after !== null && !stream) {
    throw badRequest("last_event_id: only with stream=true", "last_event_id");
  }
  // The answer as kept: its input (most of a long chain) is neither read nor parsed.
  const answer = ID.test(id) ? await ctx.conversations.readAnswer(id) : undefined;
  if (answer === undefined) throw notFound(id);
  if (!stream) return new Response(answer, { headers: JSON_HEADERS });
  const events = replay(JSON.parse(answer));
  const from = after === null ? 0 : events.findIndex((e) => e.id === after) + 1;
  if (from === 0 && after !== null) {
    throw badRequest(
      `last_event_id: no event "${after.slice(0, 64)}" in this interaction`,
      "last_event_id",
    );
  }
  return new Response(events.slice(from).map((e) => formatSse(e.event)).join(""), {
    headers: STREAM_HEADERS,
  });
};

/** DELETE /v1beta/interactions/{id}: `{}`, as Google answers (the SDK wants a 200). */
export const deleteInteraction: PluginHandler = async (ctx) => {
  const id = idFromPath(ctx);
  if (!ID.test(id) || !(await ctx.conversations.forget(id))) throw notFound(id);
  return Response.json({});
};

function flag(value: string | null, name: string): boolean {
  if (value === null || value === "false") return false;
  if (value === "true") return true;
  throw badRequest(`${name}: expected true or false, got "${value.slice(0, 32)}"`, name);
}

/**
 * A stored interaction as the events a stream of it carries, each step whole, numbered by
 * `event_id` (its position, from 1) so `last_event_id` can resume after one.
 */
function replay(resource: Obj): { id: string; event: ReturnType<typeof interactionEvent> }[] {
  const { steps, updated: _, ...head } = resource;
  const id = String(resource.id);
  const fields: [string, Obj][] = [
    ["interaction.created", {
      interaction: { ...head, status: "in_progress", usage: undefined, object: "interaction" },
    }],
    ["interaction.status_update", { interaction_id: id, status: "in_progress" }],
    ...((steps ?? []) as Obj[]).flatMap((step, index): [string, Obj][] => [
      ["step.start", { index, step }],
      ["step.stop", { index }],
    ]),
    ["interaction.completed", {
      interaction: { ...resource, steps: undefined, object: "interaction" },
    }],
  ];
  return fields.map(([type, f], i) => {
    const eventId = String(i + 1);
    return { id: eventId, event: interactionEvent(type, { ...f, event_id: eventId }) };
  });
}
