/** POST /v1beta/interactions: a model interaction, as JSON or an SSE event stream. */
import { badRequest, GatewayError } from "../../src/kit/errors.ts";
import type { GenerationSpec } from "../../src/kit/generation.ts";
import type { HandlerContext, PluginHandler, Route } from "../../src/kit/handler.ts";
import { checkModelName } from "../../src/kit/http.ts";
import { interactionsCodec } from "./codec.ts";
import { cancellable } from "./running.ts";
import { parseRequest } from "./schema.ts";
import { inputSteps, newInteractionId, storedChain } from "./stored.ts";
import { interactionsOnly } from "./history.ts";

/**
 * The route of `name`. An agent no route names is not a model the gateway lacks: agents run only
 * on Google's Interactions, so it is the 400 naming `agent` that a converted route gives too.
 */
function routeOf(ctx: HandlerContext, name: string, agent: boolean): Route {
  try {
    return ctx.route(name);
  } catch (e) {
    if (agent && e instanceof GatewayError && e.status === 404) {
      throw interactionsOnly("agent", "agent interactions");
    }
    throw e;
  }
}

export const createInteraction: PluginHandler = async (ctx) => {
  const body = await ctx.jsonBody();
  const json = parseRequest(body.json);
  // Refused on every route, relayed ones too: the gateway answers a request while it is open.
  if (json.background === true) {
    throw badRequest("background: background interactions are not supported", "background");
  }
  // An agent interaction is routed by its agent's name: relayed to a provider that speaks
  // Interactions, refused (400 naming `agent`) by the converting decoder elsewhere.
  const name = json.model ?? json.agent;
  const model = typeof name === "string" ? name : "";
  if (model) checkModelName(model);
  const g: GenerationSpec = {
    ingress: interactionsCodec,
    body,
    model,
    stream: json.stream === true,
  };
  const r = routeOf(ctx, model, json.model === undefined && json.agent !== undefined);
  // Relayed to Google, which keeps the state: its ids, `store` and chains.
  if (r.targets.every((t) => t.provider.api === interactionsCodec.api)) {
    return await ctx.generate(g, r);
  }
  const id = newInteractionId();
  const input = [
    ...await storedChain(ctx, r, json.previous_interaction_id),
    ...inputSteps(json.input),
  ];
  const { previous_interaction_id: _, ...rest } = body.json;
  const store = ctx.conversations.keeps(r) && json.store !== false;
  const keep = ctx.conversations.keeper(input, store);
  const res = await ctx.generate({
    ...g,
    body: json.previous_interaction_id === undefined ? body : { ...body, json: { ...rest, input } },
    via: "convert",
    // A kept interaction gets an id of the gateway's (a stream can be cancelled by it); an
    // unkept one keeps the upstream's.
    client: { ...(store && { id }), onAnswer: keep.onAnswer },
  }, r);
  // A JSON answer is kept before the client can chain on it (streams wait in the encoder).
  await keep.kept();
  return g.stream && store ? cancellable(res, { id, model }, ctx.conversations.owner) : res;
};
