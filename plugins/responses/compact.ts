/**
 * POST /v1/responses/compact on converted routes. Codex calls it on custom providers and fails
 * its turn if it fails. No provider but OpenAI makes OpenAI's encrypted compaction, so this is
 * the in-band `compaction_trigger` turn (the model writes the summary, carried in the
 * `compaction` item: compaction.ts) answered in the compact endpoint's shape: the user
 * messages, then that one item. Its tokens are not billed (the endpoint is `unbilled`).
 */
import type { JsonBody } from "../../src/kit/generation.ts";
import type { HandlerContext, Route } from "../../src/kit/handler.ts";
import { responsesCodec } from "./codec.ts";
import { responseSettings } from "./echo.ts";
import { parseRequest } from "./schema.ts";
import { inputItems, newResponseId, storedChain } from "./state.ts";

type Item = Record<string, unknown>;

export async function compactConverted(
  ctx: HandlerContext,
  body: JsonBody,
  r: Route,
): Promise<Response> {
  const json = parseRequest(body.json);
  const input = [
    ...await storedChain(ctx, r, json.previous_response_id),
    ...inputItems(json.input, newResponseId()),
  ] as Item[];
  const { previous_response_id: _, ...rest } = body.json;
  const res = await ctx.generate({
    ingress: responsesCodec,
    body: {
      ...body,
      json: { ...rest, input: [...input, { type: "compaction_trigger" }], stream: false },
    },
    model: r.requested,
    stream: false,
    via: "convert",
    client: { echo: responseSettings(json, false) },
  }, r);
  if (!res.ok) return res;
  const response = await res.json();
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return Response.json({
    id: response.id,
    object: "response.compaction",
    created_at: response.created_at,
    output: [...input.filter(isUserMessage).map(asOutput), ...response.output],
    usage: response.usage,
  }, { headers });
}

const isUserMessage = (item: Item) => item.type === "message" && item.role === "user";

/** An input message as the compact endpoint lists it (OpenAI's: with its status). */
const asOutput = (item: Item): Item => ({ ...item, status: "completed" });
