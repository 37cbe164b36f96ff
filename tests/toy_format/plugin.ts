/**
 * "toy": a test-only fifth wire format, built on the public plugin contract alone (nothing in
 * src/ names it). It differs from the four real ones where a format can: its own key header
 * and error envelope, HMAC-signed upstream requests, and NDJSON streams instead of SSE.
 */
import { createHash, createHmac } from "node:crypto";
import { badRequest } from "../../src/kit/errors.ts";
import type { Dialect, FormatPlugin, OutgoingRequest } from "../../src/kit/format.ts";
import type { HandlerContext, PluginHandler } from "../../src/kit/handler.ts";
import { flagOf, modelOf } from "../../src/kit/http.ts";
import { faultKind, toyCodec } from "./codec.ts";
import { interruptionLine, NDJSON, ndjsonFraming } from "./ndjson.ts";

export const toyDialect: Dialect = {
  id: "toy",
  presentedKey: (req) => req.headers.get("x-toy-key") ?? undefined,
  keyLocations: ["x-toy-key: <key>"],
  errorBody: (err) => ({ fault: { kind: err.kind, text: err.message, status: err.status } }),
  interruption: interruptionLine,
};

/** `20250102T030405Z`: what the provider's clock check parses. */
export const toyDate = (d = new Date()) => d.toISOString().replace(/[-:]|\.\d{3}/g, "");

const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * Signs the complete request: the key never leaves; the provider recomputes the HMAC over the
 * method, path, body digest and date it received.
 */
export function signToy(req: OutgoingRequest, key: string | undefined): void {
  if (!key) return;
  const date = toyDate();
  const payload = [req.method, req.url.pathname, sha256Hex(req.body), date].join("\n");
  req.headers.set("x-toy-date", date);
  req.headers.set("x-toy-signature", createHmac("sha256", key).update(payload).digest("hex"));
}

function validate(json: Record<string, unknown>) {
  const model = modelOf(json);
  if (typeof json.prompt !== "string") {
    throw badRequest("prompt: required, expected a string", "prompt");
  }
  const max = json.max_tokens;
  if (max !== undefined && !(Number.isInteger(max) && (max as number) > 0)) {
    throw badRequest("max_tokens: expected a positive integer", "max_tokens");
  }
  return { model, stream: flagOf(json, "stream") };
}

/** POST /toy/v1/generate */
const toyGenerate: PluginHandler = async (ctx) => {
  const body = await ctx.jsonBody();
  const { model, stream } = validate(body.json);
  // Toy clients read NDJSON, relayed or converted.
  return await ctx.generate({ ingress: toyCodec, body, model, stream, framing: NDJSON });
};

/**
 * GET /toy/v1/socket upgraded to a WebSocket: each text frame a toy request, answered with the
 * toy's stream lines, one per frame. Only the wire is here; the core runs the socket.
 */
const toySocket: PluginHandler = (ctx) =>
  Promise.resolve(ctx.socket<Record<string, unknown>>({
    errorFrame: (err) => JSON.stringify(toyDialect.errorBody(err)),
    pacing: "send the next request once the done line came",
    read(data) {
      if (typeof data !== "string") throw badRequest("send JSON text frames");
      let json;
      try {
        json = JSON.parse(data);
      } catch {
        throw badRequest("a frame is one JSON request");
      }
      validate(json);
      return json;
    },
    async run(ctx, socket, json) {
      const r = ctx.route(modelOf(json));
      const events = await ctx.events(
        toyCodec.decodeRequest({ ...json, stream: true }, r.requested),
        r,
      );
      await socket.stream(events, toyCodec.encodeStream({ model: r.requested }));
    },
  }));

export const toyPlugin = {
  id: "toy",
  family: "toy",
  system: "toy",
  codec: toyCodec,
  dialect: toyDialect,
  paths: ["/toy/"],
  endpoints: [{
    name: "toy_generate",
    operation: "chat",
    method: "POST",
    pattern: /^\/toy\/v1\/generate$/,
    example: "/toy/v1/generate",
    handler: toyGenerate,
  }, {
    name: "toy_socket",
    operation: "chat",
    method: "GET",
    pattern: /^\/toy\/v1\/socket$/,
    example: "/toy/v1/socket",
    handler: toySocket,
    upgrade: true,
  }],
  upstream: {
    authorize: signToy,
    framing: (interruption) => ndjsonFraming(interruption ?? interruptionLine),
    readError(body) {
      const fault = body.fault as { kind?: unknown; text?: unknown } | undefined;
      const message = typeof fault?.text === "string" ? fault.text : undefined;
      return { kind: faultKind(fault?.kind), message };
    },
  },
} satisfies FormatPlugin<HandlerContext>;
