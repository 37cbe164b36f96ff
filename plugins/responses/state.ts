/**
 * Stored responses on routes where the gateway builds the Responses object itself, on the core's
 * stored-conversation service (src/request/conversations.ts, which keeps a finished response unless
 * `store: false`): expanding `previous_response_id` into the stored chain's items, and
 * GET / DELETE /v1/responses/{id} and GET …/input_items, all by the calling client key.
 */
import type { StoredTurn } from "../../src/kit/conversations.ts";
import { badRequest, GatewayError } from "../../src/kit/errors.ts";
import type { HandlerContext, PluginHandler, Route } from "../../src/kit/handler.ts";
import { decodePathSegment, JSON_HEADERS } from "../../src/kit/http.ts";
import { itemId } from "./output.ts";

const ID = /^resp_[A-Za-z0-9_-]{1,200}$/;

/** A fresh response id for a response the gateway builds (never derived from the client). */
export function newResponseId(): string {
  return `resp_${crypto.randomUUID().replaceAll("-", "")}`;
}

const notFoundError = (id: string) =>
  new GatewayError(404, "not_found", `Response with id '${id}' not found.`, "response_id");

/** A chained id that is unknown, deleted, expired or another key's: OpenAI's 400. */
const previousNotFound = (id: string) =>
  new GatewayError(
    400,
    "invalid_request",
    `Previous response with id '${id}' not found.`,
    "previous_response_id",
    undefined,
    "previous_response_not_found",
  );

/** Chaining where the gateway keeps nothing: the interface's fixed text. */
const chainingRefused = () =>
  badRequest("previous_response_id requires a client1 passthrough route", "previous_response_id");

/** The request's input as stored input items: typed, with content parts and ids. */
export function inputItems(input: unknown, respId: string): Record<string, unknown>[] {
  const items = input == null
    ? []
    : typeof input === "string"
    ? [{ type: "message", role: "user", content: input }]
    : (input as Record<string, unknown>[]);
  return items.map((raw, i) => {
    const item: Record<string, unknown> = { type: "message", ...raw };
    if (item.type === "message" && typeof item.content === "string") {
      const type = item.role === "assistant" ? "output_text" : "input_text";
      item.content = [{ type, text: item.content }];
    }
    if (typeof item.id !== "string") item.id = itemId("in", respId, i);
    return item;
  });
}

/**
 * The stored chain a request continues, as input items (its inputs, then its outputs); none
 * without `previous_response_id`. Where the route keeps no response, the interface's 400.
 */
export async function storedChain(
  ctx: HandlerContext,
  r: Route,
  previousId: string | null | undefined,
): Promise<unknown[]> {
  if (previousId == null) return [];
  if (!ctx.conversations.keeps(r)) throw chainingRefused();
  const prev = await ctx.conversations.read(previousId);
  if (!prev) throw previousNotFound(previousId);
  return [...prev.input, ...(prev.response.output as unknown[] ?? [])];
}

function idFromPath(ctx: HandlerContext): string {
  const id = decodePathSegment(ctx.url.pathname.split("/")[3] ?? "", "response_id");
  if (!ID.test(id)) {
    throw badRequest(
      `response_id: expected a response id ("resp_…"), got "${id.slice(0, 64)}"`,
      "response_id",
    );
  }
  return id;
}

async function ownRecord(ctx: HandlerContext): Promise<StoredTurn> {
  const id = idFromPath(ctx);
  const record = await ctx.conversations.read(id);
  if (!record) throw notFoundError(id);
  return record;
}

/** GET /v1/responses/{id}: the answer as kept (its input is neither read nor parsed). */
export const getResponse: PluginHandler = async (ctx) => {
  const id = idFromPath(ctx);
  const answer = await ctx.conversations.readAnswer(id);
  if (answer === undefined) throw notFoundError(id);
  return new Response(answer, { headers: JSON_HEADERS });
};

/** DELETE /v1/responses/{id} */
export const deleteResponse: PluginHandler = async (ctx) => {
  const id = idFromPath(ctx);
  if (!(await ctx.conversations.forget(id))) throw notFoundError(id);
  return Response.json({ id, object: "response", deleted: true });
};

function intParam(url: URL, name: string, min: number, max: number, fallback: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) {
    throw badRequest(
      `${name}: expected an integer from ${min} to ${max}, got "${raw.slice(0, 32)}"`,
      name,
    );
  }
  return n;
}

/** GET /v1/responses/{id}/input_items: OpenAI's list shape, `limit` / `order` / `after`. */
export const listInputItems: PluginHandler = async (ctx) => {
  const q = ctx.url.searchParams;
  const limit = intParam(ctx.url, "limit", 1, 100, 20);
  const order = q.get("order") ?? "desc";
  if (order !== "asc" && order !== "desc") {
    throw badRequest(`order: expected "asc" or "desc", got "${order.slice(0, 32)}"`, "order");
  }
  const record = await ownRecord(ctx);
  let items = record.input as { id?: string }[];
  if (order === "desc") items = [...items].reverse();
  const after = q.get("after");
  if (after !== null) {
    const at = items.findIndex((i) => i.id === after);
    if (at < 0) {
      throw badRequest(`after: no input item "${after.slice(0, 64)}" in this response`, "after");
    }
    items = items.slice(at + 1);
  }
  const data = items.slice(0, limit);
  return Response.json({
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: items.length > limit,
  });
};
