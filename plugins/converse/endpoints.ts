/** POST /model/{modelId}/converse and /converse-stream: Converse clients (the AWS SDKs). */
import type { PluginHandler } from "../../src/kit/handler.ts";
import { readModelPath } from "../platforms/bedrock_wire.ts";
import { converseCodec } from "./codec.ts";
import { CONVERSE_STREAM } from "./framing.ts";
import { validateRequest } from "./schema.ts";

export const converse: PluginHandler = async (ctx) => {
  const { model, operation } = readModelPath(ctx.url.pathname);
  const stream = operation === "converse-stream";
  const body = await ctx.jsonBody();
  validateRequest(body.json);
  return await ctx.generate({
    ingress: converseCodec,
    body,
    model,
    stream,
    ...(stream && { framing: CONVERSE_STREAM }),
  });
};
