/** POST /v1/messages and /v1/messages/count_tokens */
import type { JsonBody } from "../../src/kit/generation.ts";
import type { HandlerContext, PluginHandler } from "../../src/kit/handler.ts";
import { badRequest } from "../../src/kit/errors.ts";
import { flagOf, modelOf } from "../../src/kit/http.ts";
import { messagesCodec } from "./codec.ts";
import { validateRequest } from "./schema.ts";

/** `2023-06-01` and the newer dated versions current SDKs send. */
const VERSION = /^\d{4}-\d{2}-\d{2}$/;

function checkVersion(headers: Headers): void {
  const version = headers.get("anthropic-version") ?? headers.get("vendor3-version");
  if (version === null) {
    throw badRequest(
      "missing required header anthropic-version (for example anthropic-version: 2023-06-01)",
      "anthropic-version",
    );
  }
  if (!VERSION.test(version)) {
    throw badRequest(
      `anthropic-version: "${version}" is not a version date such as 2023-06-01`,
      "anthropic-version",
    );
  }
}

export const messages: PluginHandler = async (ctx) => {
  checkVersion(ctx.req.headers);
  const body = await ctx.jsonBody();
  const json = validateRequest(body.json);
  return await ctx.generate({
    ingress: messagesCodec,
    body,
    model: modelOf(json),
    stream: flagOf(json, "stream"),
  });
};

export const countTokens: PluginHandler = async (ctx) =>
  await countTokensOf(ctx, await ctx.jsonBody());

/**
 * Token counts come from the provider itself: only a route with an Anthropic-API target can
 * answer, and only such targets are tried (the relay skips the others). `headers`: the
 * client's as the relay forwards them, where they are not the request's own.
 */
export async function countTokensOf(
  ctx: HandlerContext,
  body: JsonBody,
  headers?: Headers,
): Promise<Response> {
  const r = ctx.route(modelOf(body.json));
  if (!r.targets.some((t) => t.provider.api === messagesCodec.api)) {
    throw badRequest("messages token counting requires a family3-compatible upstream", "model");
  }
  return await ctx.relay({
    ingress: messagesCodec,
    body,
    headers,
    path: "/v1/messages/count_tokens",
    operation: "count_tokens",
    // Counting reads the input; it produces nothing.
    usage: ({ json: [answer] }) =>
      typeof answer?.input_tokens === "number"
        ? { inputTokens: answer.input_tokens, outputTokens: 0 }
        : undefined,
  }, r);
}
