/** POST /v1/chat/completions */
import type { Handler } from "../../src/context.ts";
import { flagOf, modelOf, readJsonBody } from "../../src/http.ts";
import { generate } from "../../src/pipeline.ts";
import { chatCodec } from "./codec.ts";
import { parseRequest } from "./schema.ts";

export const chatCompletions: Handler = async (ctx) => {
  const body = await readJsonBody(ctx.req);
  const json = parseRequest(body.json);
  return await generate(ctx, {
    ingress: chatCodec,
    body,
    model: modelOf(json),
    stream: flagOf(json, "stream"),
    client: { streamUsage: json.stream_options?.include_usage === true },
  });
};
