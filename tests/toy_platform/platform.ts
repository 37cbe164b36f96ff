/**
 * A toy cloud platform, test-only, proving that a platform is a plugin: added without an edit
 * under src/. It carries Anthropic's Messages format to `<base>/t/<tenant>/models/<model>/…`,
 * with a token it mints from a secret (cached, re-minted on a 401), the body's `model` and
 * `stream` replaced by its own `toy_version`, its streams as NDJSON lines (re-framed as the
 * format's SSE), its own error header and in-stream exception lines.
 */
import { z } from "zod";
import type { UpstreamFraming } from "../../src/kit/framing.ts";
import type { SseEvent } from "../../src/kit/sse.ts";
import type { Platform } from "../../src/kit/platform.ts";

export const TOY_VERSION = "toy-2025-01-01";

const settings = z.strictObject({
  tenant: z.string().regex(/^[a-z0-9-]+$/, "lower-case letters, digits and dashes"),
  secret: z.string().min(8),
});
type ToySettings = z.infer<typeof settings>;

const encoder = new TextEncoder();

/** NDJSON lines, each one event of the format (or an `exception`), re-framed as its SSE. */
function ndjsonFraming(inner: UpstreamFraming): UpstreamFraming {
  return {
    mediaType: "application/x-ndjson",
    relayedType: inner.mediaType,
    scan(buf, _from, decode) {
      const cut = buf.lastIndexOf(10) + 1;
      if (cut === 0) return { cut, events: [] };
      const events: SseEvent[] = [];
      let text = "";
      for (const line of decode(buf.subarray(0, cut)).split("\n").filter(Boolean)) {
        const json = JSON.parse(line);
        if (json.exception) {
          const error = { status: 429, kind: "rate_limit" as const, message: json.message };
          return {
            cut,
            events,
            text,
            bytes: encoder.encode(text),
            exception: { at: events.length, error },
          };
        }
        const data = JSON.stringify(json);
        events.push({ event: json.type, data });
        text += `event: ${json.type}\ndata: ${data}\n\n`;
      }
      return { cut, events, text, bytes: encoder.encode(text) };
    },
    complete: inner.complete,
    interrupted: inner.interrupted,
  };
}

export const toyPlatform: Platform<ToySettings> = {
  id: "toy-cloud",
  system: "toy.cloud",
  apis: ["messages"],
  settings: { key: "toy", schema: settings },
  address: {
    url({ base_url, settings }, { model, operation, stream }) {
      const tenant = `${base_url}/t/${settings.tenant}`;
      if (operation === "count_tokens") return `${tenant}/count`;
      return `${tenant}/models/${encodeURIComponent(model)}/${stream ? "stream" : "generate"}`;
    },
  },
  credential({ base_url, settings }, ctx) {
    let cached: Promise<string> | undefined;
    const mint = async (signal: AbortSignal) => {
      const res = await fetch(`${base_url}/token`, {
        method: "POST",
        body: JSON.stringify({ secret: settings.secret }),
        signal,
      });
      const { token } = await res.json();
      ctx.secret(token);
      return token as string;
    };
    ctx.secret(settings.secret);
    return {
      async authorize(req, _key, signal) {
        cached ??= mint(signal);
        req.headers.set("authorization", `Toy ${await cached}`);
      },
      refused() {
        cached = undefined;
      },
    };
  },
  body: {
    request({ model: _model, stream: _stream, ...body }, headers) {
      headers.delete("anthropic-version");
      return { ...body, toy_version: TOY_VERSION };
    },
  },
  framing: (inner) => ndjsonFraming(inner),
  readError(_status, headers) {
    if (headers.get("x-toy-error") === "Busy") {
      return { kind: "overloaded", status: 503, retry: true };
    }
  },
  models: {
    family: (model) => model.startsWith("other.") ? "toy-other" : undefined,
    unsafe: (model) => model.includes("/") ? "a toy model name holds no `/`" : undefined,
  },
};
