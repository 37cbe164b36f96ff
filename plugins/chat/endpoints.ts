/** POST /v1/chat/completions */
import type { PluginHandler } from "../../src/kit/handler.ts";
import { flagOf, modelOf } from "../../src/kit/http.ts";
import { chatCodec } from "./codec.ts";
import { parseRequest } from "./schema.ts";

export const chatCompletions: PluginHandler = async (ctx) => {
  const body = await ctx.jsonBody();
  const json = parseRequest(body.json);
  const stream = flagOf(json, "stream");
  const streamUsage = json.stream_options?.include_usage === true;
  return await ctx.generate({
    ingress: chatCodec,
    body,
    model: modelOf(json),
    stream,
    // A stream relayed without include_usage reports no usage: nothing would be counted (limits,
    // token metrics). Converted, the provider is always asked for it; the client sees it only
    // if it asked.
    via: stream && !streamUsage ? "convert" : "auto",
    client: { streamUsage },
  });
};
