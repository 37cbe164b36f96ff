/**
 * Endpoints about the gateway itself: model lists and health. The router supplies the models
 * (concrete ids only, see Router.models, with what providers report); each format plugin its
 * list's shape. On a path several formats list at, the caller's format is the one whose listing
 * claims the request.
 */
import type { Handler, RequestContext } from "./context.ts";
import { GatewayError } from "../kit/errors.ts";
import { errorResponse } from "./error_response.ts";
import type { Dialect, ModelListing } from "../kit/format.ts";
import { decodePathSegment } from "../kit/http.ts";
import { clip } from "../kit/model_name.ts";

/** The listing (and dialect) that answers a request. */
type PickListing = (req: Request) => { listing: ModelListing; dialect: Dialect };

/** The models listed now: never waits for a provider (their lists are read in the background). */
const listed = (ctx: RequestContext) =>
  ctx.gw.router.models((provider) => ctx.gw.providerModels.ids(provider));

/** GET {path}; a format without a list here names the path that has one. */
export const modelList = (pick: PickListing): Handler => (ctx) => {
  const { listing, dialect } = pick(ctx.req);
  if (listing.list) {
    return Promise.resolve(Response.json(listing.list(listed(ctx), ctx.url)));
  }
  const err = new GatewayError(
    404,
    "not_found",
    `GET ${listing.path} (listing models) is not supported; list models with ` +
      `GET ${listing.listedAt}`,
  );
  return answerError(ctx, dialect, err);
};

/** GET {path}/{id}; an unknown id is a 404 in the caller's dialect, as the list is its shape. */
export const modelById = (path: string, pick: PickListing): Handler => (ctx) => {
  const { listing, dialect } = pick(ctx.req);
  let err: GatewayError;
  try {
    const id = decodePathSegment(ctx.url.pathname.slice(path.length + 1), "model");
    const m = listed(ctx).find((m) => m.id === id);
    if (m) return Promise.resolve(Response.json(listing.one(m)));
    err = new GatewayError(
      404,
      "model_not_found",
      `model "${clip(id)}" is not listed by this gateway`,
      "model",
    );
  } catch (e) {
    if (!(e instanceof GatewayError)) throw e;
    err = e;
  }
  return answerError(ctx, dialect, err);
};

/** In the caller's dialect, which on a shared path is not always the endpoint's. */
function answerError(ctx: RequestContext, dialect: Dialect, err: GatewayError): Promise<Response> {
  ctx.trace.failed(err.kind, err.message);
  return Promise.resolve(errorResponse(dialect, err, ctx.requestId));
}

/** What `GET /` (and `HEAD /`) says, with no key: the service's name and nothing else. */
const ROOT_TEXT = "LLM gateway\n";

/** Clients probe their base URL at start-up (Claude Code's `HEAD /`). */
export const root: Handler = () =>
  Promise.resolve(
    new Response(ROOT_TEXT, { headers: { "content-type": "text/plain; charset=utf-8" } }),
  );

export const healthz: Handler = () => Promise.resolve(Response.json({ status: "ok" }));

/** Ready until shutdown starts, so Kong's health checks move traffic away first. */
export const readyz: Handler = (ctx) =>
  Promise.resolve(
    ctx.gw.draining
      ? Response.json({ status: "draining" }, { status: 503 })
      : Response.json({ status: "ready" }),
  );
