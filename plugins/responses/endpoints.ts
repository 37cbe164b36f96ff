/** POST /v1/responses and /v1/responses/compact (converted routes: compact.ts) */
import type * as ir from "../../src/kit/ir.ts";
import { badRequest } from "../../src/kit/errors.ts";
import { flagOf, modelOf } from "../../src/kit/http.ts";
import type { GenerationSpec } from "../../src/kit/generation.ts";
import type { HandlerContext, PluginHandler, Route } from "../../src/kit/handler.ts";
import { responsesCodec } from "./codec.ts";
import { compactConverted } from "./compact.ts";
import { responseSettings } from "./echo.ts";
import { parseRequest, type ResponsesRequest } from "./schema.ts";
import { inputItems, newResponseId, storedChain } from "./state.ts";

/** The answer to a warm-up (`generate: false`) on a converted route: completed, no output. */
export function warmupResponse(ctx: HandlerContext, model: string): ir.Response {
  const { id, now } = ctx.localId();
  return {
    id,
    model,
    created: now,
    parts: [],
    finish: "stop",
    usage: { inputTokens: 0, outputTokens: 0 },
  };
}

/** A route whose provider keeps Responses state: requests relay verbatim, ids included. */
export function isPassthroughRoute(r: Route): boolean {
  return r.route.passthrough && r.provider.api === "responses";
}

/** Rules of the product spec that hold for HTTP requests on any route. */
export function checkStatefulFields(json: Record<string, unknown>): void {
  if (json.background === true) {
    throw badRequest("background responses are not supported", "background");
  }
}

/** Why a relayed request must stay with Responses providers: state only they keep. */
function providerState(json: Record<string, unknown>): string | undefined {
  const compaction = Array.isArray(json.input) &&
    json.input.some((i) => i?.type === "compaction");
  return json.previous_response_id != null || compaction
    ? "previous_response_id and compaction items are state kept by a Responses provider"
    : undefined;
}

/** Tool types the IR cannot carry (hosted tools): such requests relay as before. */
const hostedTools = (json: ResponsesRequest) =>
  (json.tools ?? []).some((t) => !["function", "custom", "namespace"].includes(t.type ?? ""));

export const responses: PluginHandler = async (ctx) => {
  const body = await ctx.jsonBody();
  const json = parseRequest(body.json);
  const kept = providerState(body.json);
  const g: GenerationSpec = {
    ingress: responsesCodec,
    body,
    model: modelOf(json),
    stream: flagOf(json, "stream"),
    ...(kept && { via: { relayOnly: kept } }),
  };
  checkStatefulFields(json);
  const r = ctx.route(g.model);
  // The provider keeps Responses state: relay verbatim, ids included.
  if (isPassthroughRoute(r)) return await ctx.generate(g, r);
  const chained = json.previous_response_id != null;
  const keeps = ctx.conversations.keeps(r);
  const store = keeps && json.store !== false;
  // A Responses provider without `passthrough` relays stateless requests (and hosted tools);
  // keeping or reading state needs the response built here, so those convert through the IR,
  // as do requests a route that keeps nothing must answer (and send upstream) as `store: false`.
  if (
    r.provider.api === "responses" && !chained &&
    (json.store === false || (keeps && hostedTools(json)))
  ) {
    ctx.trace.stored = "relayed";
    return await ctx.generate(g, r);
  }
  const id = newResponseId();
  const input = [
    ...await storedChain(ctx, r, json.previous_response_id),
    ...inputItems(json.input, id),
  ];
  const { previous_response_id: _, ...rest } = body.json;
  const keep = ctx.conversations.keeper(input, store);
  const expanded: GenerationSpec = {
    ...g,
    body: chained ? { ...body, json: { ...rest, input } } : body,
    via: "convert",
    client: {
      echo: responseSettings(json, store),
      // A kept response gets an id of the gateway's; an unkept one keeps the upstream's.
      ...(store && { id }),
      onAnswer: keep.onAnswer,
    },
  };
  const res = json.generate === false && r.provider.api !== "responses"
    ? ctx.answer(expanded, warmupResponse(ctx, g.model))
    : await ctx.generate(expanded, r);
  // A JSON answer is kept before the client can chain on it (streams wait in the encoder).
  await keep.kept();
  return res;
};

export const compact: PluginHandler = async (ctx) => {
  const body = await ctx.jsonBody();
  const r = ctx.route(modelOf(body.json));
  if (!isPassthroughRoute(r)) {
    if (r.route.compact === false) {
      throw badRequest("responses compact requires a client1 passthrough route", "model");
    }
    return await compactConverted(ctx, body, r);
  }
  return await ctx.relay({
    ingress: responsesCodec,
    body,
    path: "/responses/compact",
    why: providerState(body.json),
  }, r);
};
