/** POST /v1beta/interactions: a model interaction, as JSON or an SSE event stream. */
import type { PluginHandler } from "../../src/contract/handler.ts";
import { badRequest } from "../../src/contract/errors.ts";
import { checkModelName, readJsonBody } from "../../src/http.ts";
import { interactionsCodec } from "./codec.ts";
import { validateRequest } from "./schema.ts";

export const createInteraction: PluginHandler = async (ctx) => {
  const body = await readJsonBody(ctx.req);
  const json = validateRequest(body.json);
  // Refused on every route, relayed ones too: the gateway answers a request while it is open.
  if (json.background === true) {
    throw badRequest("background: background interactions are not supported", "background");
  }
  // An agent interaction is routed by its agent's name: relayed to a provider that speaks
  // Interactions, refused (400 naming `agent`) by the converting decoder elsewhere.
  const name = json.model ?? json.agent;
  const model = typeof name === "string" ? name : "";
  if (model) checkModelName(model);
  return await ctx.generate({
    ingress: interactionsCodec,
    body,
    model,
    stream: json.stream === true,
  });
};
