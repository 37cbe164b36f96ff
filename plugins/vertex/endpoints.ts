/**
 * Vertex AI's model endpoints, as clients call Vertex itself:
 * `POST /{v1|v1beta1}/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{action}`
 * (genai's express mode leaves out project and location). Project and location are accepted and
 * ignored: the model routes. Claude's `:rawPredict` / `:streamRawPredict` (the body's `stream`
 * decides, as Vertex's model server reads it) and `count-tokens:rawPredict`; Gemini's
 * `:generateContent` / `:streamGenerateContent`.
 */
import { badRequest } from "../../src/kit/errors.ts";
import type { HandlerContext, PluginHandler } from "../../src/kit/handler.ts";
import { checkModelName, decodePathSegment, flagOf, modelOf } from "../../src/kit/http.ts";
import { generation } from "../generate-content/endpoints.ts";
import { countTokensOf } from "../messages/endpoints.ts";
import { validateRequest } from "../messages/schema.ts";
import { checkCloudVersion, fromCloudBody, messagesHeaders } from "../platforms/claude_body.ts";
import { PUBLISHERS, readVertexPath, VERTEX_CLAUDE } from "../platforms/vertex_wire.ts";
import { vertexMessagesCodec } from "./codec.ts";

/** The model a path names for `publisher` and its action, which must be one served here. */
function modelCall(pathname: string, publisher: "anthropic" | "google") {
  const { segment, action } = readVertexPath(pathname);
  const model = checkModelName(decodePathSegment(segment, "model"));
  if (!/^[A-Za-z0-9._@-]+$/.test(model)) {
    throw badRequest(
      `invalid model "${model}" in the path: only letters, digits, ".", "_", "-" and "@" are allowed`,
      "model",
    );
  }
  const { json, stream } = PUBLISHERS[publisher];
  if (action !== json && action !== stream) {
    throw badRequest(
      `unsupported Vertex AI action "${action}" on publishers/${publisher} models: ` +
        `this gateway serves :${json} and :${stream}`,
      "action",
    );
  }
  return { model, action };
}

/** The body of a Claude call read as the Messages body, and the headers it stands for. */
async function claudeBody(ctx: HandlerContext, model?: string) {
  const body = await ctx.jsonBody();
  checkCloudVersion(body.json, VERTEX_CLAUDE);
  const read = fromCloudBody(body.json, { model: model ?? modelOf(body.json) }, VERTEX_CLAUDE);
  return {
    body: { json: read.body, raw: JSON.stringify(read.body) },
    headers: messagesHeaders(ctx.req.headers, read),
  };
}

export const rawPredict: PluginHandler = async (ctx) => {
  const { model } = modelCall(ctx.url.pathname, "anthropic");
  const { body, headers } = await claudeBody(ctx, model);
  validateRequest(body.json);
  return await ctx.generate({
    ingress: vertexMessagesCodec,
    body,
    model,
    stream: flagOf(body.json, "stream"),
    headers,
  });
};

/** `count-tokens:rawPredict`: the body names the model; counted by a Messages provider. */
export const countTokens: PluginHandler = async (ctx) => {
  const { body, headers } = await claudeBody(ctx);
  return await countTokensOf(ctx, body, headers);
};

export const generateContent: PluginHandler = async (ctx) => {
  const { model, action } = modelCall(ctx.url.pathname, "google");
  return await generation(ctx, model, action === PUBLISHERS.google.stream);
};
