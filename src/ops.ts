/** Endpoints about the gateway itself: model list and health. */
import type { Handler } from "./context.ts";
import { notFound } from "./errors.ts";

export const models: Handler = (ctx) =>
  Promise.resolve(Response.json({
    object: "list",
    data: ctx.gw.router.models().map((m) => ({
      id: m.id,
      object: "model",
      created: 0,
      owned_by: m.owned_by,
    })),
  }));

export const geminiModels: Handler = () =>
  Promise.reject(
    notFound("model listing is not served on /v1beta/models; use GET /v1/models"),
  );

export const healthz: Handler = () => Promise.resolve(Response.json({ status: "ok" }));

/** Ready until shutdown starts, so Kong's health checks move traffic away first. */
export const readyz: Handler = (ctx) =>
  Promise.resolve(
    ctx.gw.draining
      ? Response.json({ status: "draining" }, { status: 503 })
      : Response.json({ status: "ready" }),
  );
