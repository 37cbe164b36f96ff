/** POST /v1beta/models/{model}:generateContent | :streamGenerateContent */
import type { Handler } from "../../src/context.ts";
import { badRequest } from "../../src/errors.ts";
import { readJsonBody } from "../../src/http.ts";
import { type Framing, generate } from "../../src/pipeline.ts";
import type { SseEvent } from "../../src/sse.ts";
import { jsonArrayFraming } from "../../src/stream_stage.ts";
import { geminiCodec } from "./codec.ts";
import { path } from "./upstream.ts";
import { validateRequest } from "./schema.ts";

const PREFIX = "/v1beta/models/";
const ACTIONS = ["generateContent", "streamGenerateContent"];

function parsePath(pathname: string): { model: string; action: string } {
  const target = pathname.slice(PREFIX.length);
  const colon = target.lastIndexOf(":");
  const model = colon < 0 ? target : target.slice(0, colon);
  const action = colon < 0 ? "" : target.slice(colon + 1);
  if (!/^[A-Za-z0-9._-]+$/.test(model)) {
    throw badRequest(
      `invalid model "${model}" in the path: only letters, digits, ".", "_" and "-" are allowed`,
      "model",
    );
  }
  if (!ACTIONS.includes(action)) throw badRequest("unsupported vendor2 action", "action");
  return { model, action };
}

/** Without `alt=sse`, Google streams one JSON array whose elements arrive as they are made. */
const JSON_ARRAY: Framing = {
  contentType: "application/json; charset=utf-8",
  serializer: () => {
    let first = true;
    return (e: SseEvent) => {
      const text = (first ? "[" : ",\r\n") + e.data;
      first = false;
      return text;
    };
  },
  end: {
    complete: (sent) => (sent ? "]" : "[]"),
    interrupted: (sent, why) => `${sent ? ",\r\n" : "["}${errorElement(why)}]`,
  },
  relayed: () => jsonArrayFraming(errorElement),
};

/** The interruption as the array's last element, in Google's error shape (js-genai raises it). */
function errorElement(why: string): string {
  const error = { code: 502, message: why, status: "UNAVAILABLE", type: "upstream_interrupted" };
  return JSON.stringify({ error });
}

export const generateContent: Handler = async (ctx) => {
  const { model, action } = parsePath(ctx.url.pathname);
  const stream = action === "streamGenerateContent";
  const sse = ctx.url.searchParams.get("alt") === "sse";
  const body = await readJsonBody(ctx.req);
  validateRequest(body.json);
  const arrayStream = stream && !sse;
  return await generate(ctx, {
    ingress: geminiCodec,
    body,
    model,
    stream,
    passthroughPath: arrayStream ? (upstreamModel) => path(upstreamModel, true, "") : undefined,
    framing: arrayStream ? JSON_ARRAY : undefined,
  });
};
