/**
 * Endpoints about the gateway itself: model lists and health. The model list answers in the
 * dialect of the credential: Bearer → OpenAI's list, `x-api-key` → Anthropic's, and
 * /v1beta/models → Gemini's. Only concrete ids are listed (see Router.models).
 */
import type { Handler, RequestContext } from "./context.ts";
import { errorResponse, GatewayError } from "./errors.ts";
import type { ListedModel } from "./router.ts";

/**
 * Anthropic's list answers Anthropic clients: they send `anthropic-version` (the Anthropic SDK
 * 1.x authenticates with a Bearer token) or `x-api-key` without `Authorization`.
 */
const anthropicCaller = (req: Request) =>
  req.headers.has("anthropic-version") ||
  (req.headers.has("x-api-key") && !req.headers.has("authorization"));

const openaiModel = (m: ListedModel) => ({
  id: m.id,
  object: "model",
  created: 0,
  owned_by: m.owned_by,
});

const anthropicModel = (m: ListedModel) => ({
  type: "model",
  id: m.id,
  display_name: m.display_name ?? m.id,
  created_at: "1970-01-01T00:00:00Z",
  ...(m.context_window && { max_input_tokens: m.context_window }),
  ...(m.max_output_tokens && { max_tokens: m.max_output_tokens }),
});

const geminiModel = (m: ListedModel) => ({
  name: `models/${m.id}`,
  version: "001",
  displayName: m.display_name ?? m.id,
  ...(m.context_window && { inputTokenLimit: m.context_window }),
  ...(m.max_output_tokens && { outputTokenLimit: m.max_output_tokens }),
  supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens"],
});

/** A model id from the path after `prefix`, or undefined. */
const idAfter = (ctx: RequestContext, prefix: string) =>
  decodeURIComponent(ctx.url.pathname.slice(prefix.length));

function unknownModel(id: string): GatewayError {
  return new GatewayError(
    404,
    "model_not_found",
    `model "${id}" is not listed by this gateway`,
    "model",
  );
}

function anthropicPage(ctx: RequestContext, all: ListedModel[]) {
  const q = ctx.url.searchParams;
  const limit = Math.min(Math.max(Number(q.get("limit") ?? 20) || 20, 1), 1000);
  let list = all;
  const after = q.get("after_id");
  const before = q.get("before_id");
  if (after) list = list.slice(list.findIndex((m) => m.id === after) + 1);
  if (before) {
    const at = list.findIndex((m) => m.id === before);
    if (at >= 0) list = list.slice(Math.max(0, at - limit), at);
  }
  const data = list.slice(0, limit).map(anthropicModel);
  return {
    data,
    has_more: list.length > limit,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
  };
}

/** GET /v1/models */
export const models: Handler = (ctx) => {
  const all = ctx.gw.router.models();
  return Promise.resolve(Response.json(
    anthropicCaller(ctx.req)
      ? anthropicPage(ctx, all)
      : { object: "list", data: all.map(openaiModel) },
  ));
};

/** GET /v1/models/{id} */
export const model: Handler = (ctx) => {
  const id = idAfter(ctx, "/v1/models/");
  const m = ctx.gw.router.models().find((m) => m.id === id);
  if (!m) {
    const err = unknownModel(id);
    if (!anthropicCaller(ctx.req)) return Promise.reject(err);
    // The 404 speaks the caller's dialect, as the list does.
    ctx.trace.failed(err.kind, err.message);
    return Promise.resolve(errorResponse("anthropic", err, ctx.requestId));
  }
  return Promise.resolve(
    Response.json(anthropicCaller(ctx.req) ? anthropicModel(m) : openaiModel(m)),
  );
};

/** GET /v1beta/models (`pageSize`, `pageToken` = the last id of the previous page). */
export const geminiModels: Handler = (ctx) => {
  const q = ctx.url.searchParams;
  const size = Math.min(Math.max(Number(q.get("pageSize") ?? 50) || 50, 1), 1000);
  let list = ctx.gw.router.models();
  const token = q.get("pageToken");
  if (token) list = list.slice(list.findIndex((m) => m.id === token) + 1);
  const page = list.slice(0, size);
  return Promise.resolve(Response.json({
    models: page.map(geminiModel),
    ...(list.length > size && { nextPageToken: page.at(-1)!.id }),
  }));
};

/** GET /v1beta/models/{id} */
export const geminiModelById: Handler = (ctx) => {
  const id = idAfter(ctx, "/v1beta/models/");
  const m = ctx.gw.router.models().find((m) => m.id === id);
  return m ? Promise.resolve(Response.json(geminiModel(m))) : Promise.reject(unknownModel(id));
};

export const healthz: Handler = () => Promise.resolve(Response.json({ status: "ok" }));

/** Ready until shutdown starts, so Kong's health checks move traffic away first. */
export const readyz: Handler = (ctx) =>
  Promise.resolve(
    ctx.gw.draining
      ? Response.json({ status: "draining" }, { status: 503 })
      : Response.json({ status: "ready" }),
  );
