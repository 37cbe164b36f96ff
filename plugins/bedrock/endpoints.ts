/**
 * Bedrock Runtime's Claude operations, as clients call Bedrock itself:
 * `POST /model/{modelId}/invoke` and `/invoke-with-response-stream` (Anthropic's body, Bedrock's
 * version and betas in it; Claude Code, the Anthropic Bedrock SDK, the AWS SDKs'
 * InvokeModelCommand) and `/count-tokens` (CountTokens, either of its inputs). The path's model
 * id routes.
 */
import { badRequest } from "../../src/kit/errors.ts";
import type { JsonBody } from "../../src/kit/generation.ts";
import type { PluginHandler } from "../../src/kit/handler.ts";
import { converseCodec } from "../converse/codec.ts";
import { parseCountTokens } from "../converse/schema.ts";
import { messagesCodec } from "../messages/codec.ts";
import { countTokensOf } from "../messages/endpoints.ts";
import { validateRequest } from "../messages/schema.ts";
import { BEDROCK_CLAUDE } from "../platforms/bedrock.ts";
import { readModelPath } from "../platforms/bedrock_wire.ts";
import { checkCloudVersion, fromCloudBody, messagesHeaders } from "../platforms/claude_body.ts";
import { isObj } from "../converse/common.ts";
import { bedrockMessagesCodec } from "./codec.ts";
import { INVOKE_STREAM } from "./framing.ts";

/** An InvokeModel body as the Messages request it stands for, and the headers it implies. */
function messagesRequest(
  json: Record<string, unknown>,
  model: string,
  stream: boolean,
  headers: Headers,
) {
  checkCloudVersion(json, BEDROCK_CLAUDE);
  const read = fromCloudBody(json, { model, stream }, BEDROCK_CLAUDE);
  const body: JsonBody = { json: read.body, raw: JSON.stringify(read.body) };
  return { body, headers: messagesHeaders(headers, read) };
}

export const invoke: PluginHandler = async (ctx) => {
  const { model, operation } = readModelPath(ctx.url.pathname);
  const stream = operation === "invoke-with-response-stream";
  const { json } = await ctx.jsonBody();
  const { body, headers } = messagesRequest(json, model, stream, ctx.req.headers);
  validateRequest(body.json);
  return await ctx.generate({
    ingress: bedrockMessagesCodec,
    body,
    model,
    stream,
    headers,
    ...(stream && { framing: INVOKE_STREAM }),
  });
};

/** What Anthropic's token counting reads of a Messages body. */
const COUNTED = ["model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers"];

const counted = (body: Record<string, unknown>) =>
  Object.fromEntries(COUNTED.filter((k) => body[k] !== undefined).map((k) => [k, body[k]]));

/** An InvokeModel body in base64, as CountTokens' `invokeModel` input carries it. */
function invokeInput(base64: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(base64)));
  } catch {
    throw badRequest("input.invokeModel.body: expected the base64 of a JSON body", "input");
  }
  if (!isObj(json)) throw badRequest("input.invokeModel.body: expected a JSON object", "input");
  return json;
}

/**
 * `POST /model/{modelId}/count-tokens`: counted by a Messages provider of the route (Anthropic,
 * Bedrock's own CountTokens, Vertex), the Converse input converted to Anthropic's body first;
 * answered as CountTokens answers (`{"inputTokens"}`).
 */
export const countTokens: PluginHandler = async (ctx) => {
  const { model } = readModelPath(ctx.url.pathname);
  const { input } = parseCountTokens((await ctx.jsonBody()).json);
  let body: Record<string, unknown>;
  let headers: Headers | undefined;
  if (input.invokeModel) {
    const invokeBody = invokeInput(input.invokeModel.body);
    const read = messagesRequest(invokeBody, model, false, ctx.req.headers);
    body = read.body.json;
    headers = read.headers;
  } else if (input.converse) {
    const req = converseCodec.decodeRequest(input.converse, model);
    body = messagesCodec.encodeRequest(req, { model, route: model, defaultMaxTokens: 1 });
  } else throw badRequest("input: expected invokeModel or converse", "input");
  const json = { ...counted(body), model };
  const res = await countTokensOf(ctx, { json, raw: JSON.stringify(json) }, headers);
  if (!res.ok) return res;
  const { input_tokens } = await res.json();
  // The provider's headers (request ids) stay; the body's length does not.
  const answered = new Headers(res.headers);
  answered.delete("content-length");
  return Response.json({ inputTokens: input_tokens }, { headers: answered });
};
