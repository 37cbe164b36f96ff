/** POST /v1/responses and /v1/responses/compact */
import type { Handler, RequestContext } from "../../src/context.ts";
import type * as ir from "../../src/ir.ts";
import { badRequest } from "../../src/errors.ts";
import { flagOf, modelOf, readJsonBody } from "../../src/http.ts";
import {
  answerLocally,
  generate,
  type Generation,
  localId,
  passthrough,
  resolveRoute,
} from "../../src/pipeline.ts";
import type { Resolved } from "../../src/router.ts";
import { responsesCodec } from "./codec.ts";
import { validateRequest } from "./schema.ts";

/** The answer to a warm-up (`generate: false`) on a converted route: completed, no output. */
export function warmupResponse(ctx: RequestContext, model: string): ir.Response {
  const { id, now } = localId(ctx);
  return {
    id,
    model,
    created: now,
    parts: [],
    finish: "stop",
    usage: { inputTokens: 0, outputTokens: 0 },
  };
}

/** A route whose provider keeps Responses state: requests relay verbatim, ids included. */
export function isPassthroughRoute(r: Resolved): boolean {
  return r.route.passthrough && r.provider.api === "responses";
}

/** Rules of the product spec that hold for HTTP requests on any route. */
export function checkStatefulFields(json: Record<string, unknown>, r: Resolved): void {
  if (json.background === true) {
    throw badRequest("background responses are not supported", "background");
  }
  if (json.previous_response_id != null && !isPassthroughRoute(r)) {
    throw badRequest(
      "previous_response_id requires a client1 passthrough route",
      "previous_response_id",
    );
  }
}

export const responses: Handler = async (ctx) => {
  const body = await readJsonBody(ctx.req);
  const json = validateRequest(body.json);
  const g: Generation = {
    ingress: responsesCodec,
    body,
    model: modelOf(json),
    stream: flagOf(json, "stream"),
    checkRoute: (r) => checkStatefulFields(json, r),
  };
  // A warm-up (`generate: false`) produces no output; only a Responses provider needs it.
  if (json.generate === false) {
    const r = resolveRoute(ctx, g.model);
    g.checkRoute!(r);
    if (r.provider.api !== "responses") return answerLocally(ctx, g, warmupResponse(ctx, g.model));
  }
  return await generate(ctx, g);
};

export const compact: Handler = async (ctx) => {
  const body = await readJsonBody(ctx.req);
  const r = resolveRoute(ctx, modelOf(body.json));
  if (!isPassthroughRoute(r)) {
    throw badRequest("responses compact requires a client1 passthrough route", "model");
  }
  ctx.record.passthrough = true;
  return await passthrough(
    ctx,
    { ingress: responsesCodec, body, stream: false },
    r,
    "/responses/compact",
  );
};
