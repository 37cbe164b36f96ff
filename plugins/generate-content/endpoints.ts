/** POST /v1beta/models/{model}:generateContent | :streamGenerateContent */
import type { HandlerContext, PluginHandler } from "../../src/kit/handler.ts";
import { badRequest } from "../../src/kit/errors.ts";
import { checkModelName } from "../../src/kit/http.ts";
import { JSON_ARRAY } from "./framing.ts";
import { generateContentCodec } from "./codec.ts";
import { path } from "./upstream.ts";
import { validateRequest } from "./schema.ts";
import { GENERATION_METHODS } from "./dialect.ts";

const PREFIX = "/v1beta/models/";
const ACTIONS: readonly string[] = GENERATION_METHODS;

function parsePath(pathname: string): { model: string; action: string } {
  const target = pathname.slice(PREFIX.length);
  const colon = target.lastIndexOf(":");
  const model = colon < 0 ? target : target.slice(0, colon);
  const action = colon < 0 ? "" : target.slice(colon + 1);
  checkModelName(model);
  if (!/^[A-Za-z0-9._-]+$/.test(model)) {
    throw badRequest(
      `invalid model "${model}" in the path: only letters, digits, ".", "_" and "-" are allowed`,
      "model",
    );
  }
  if (!ACTIONS.includes(action)) throw badRequest("unsupported vendor2 action", "action");
  return { model, action };
}

export const generateContent: PluginHandler = async (ctx) => {
  const { model, action } = parsePath(ctx.url.pathname);
  return await generation(ctx, model, action === "streamGenerateContent");
};

/**
 * A generateContent call for `model` (from its path), streaming or not: server-sent events
 * with `?alt=sse`, else a JSON array (relayed as one, to a provider asked for one).
 */
export async function generation(
  ctx: HandlerContext,
  model: string,
  stream: boolean,
): Promise<Response> {
  const sse = ctx.url.searchParams.get("alt") === "sse";
  const body = await ctx.jsonBody();
  validateRequest(body.json);
  const arrayStream = stream && !sse;
  return await ctx.generate({
    ingress: generateContentCodec,
    body,
    model,
    stream,
    ...(arrayStream && {
      relayPath: (upstreamModel: string) => path(upstreamModel, true, ""),
      framing: JSON_ARRAY,
    }),
  });
}
