/**
 * The toy cloud on loopback (for tests/toy_platform/platform.ts): tokens minted at `/token` for
 * the tenant's secret, Anthropic's Messages under `/t/<tenant>/models/<model>/generate|stream`
 * with `toy_version` instead of `model` and `stream`, NDJSON streams, in-stream exception lines,
 * and `x-toy-error: Busy` on a model named `…busy…`. Scenarios as in tests/mock/upstream.ts.
 */
import { messages } from "../mock/messages.ts";
import { type MockUpstream, startMockUpstream } from "../mock/upstream.ts";
import type { Json, Vendor } from "../mock/vendor.ts";
import type { Framing } from "../mock/wire.ts";
import { TOY_VERSION } from "./platform.ts";

export const TOY_TENANT = "acme";
export const TOY_SECRET = "toy-tenant-secret-0001";

const toyMessages: Vendor = {
  ...messages,
  validate(body: Json) {
    if ("model" in body || "stream" in body) return "model and stream are not toy fields";
    if (body.toy_version !== TOY_VERSION) return "toy_version is required";
    return messages.validate(body);
  },
  streamError: (_status, detail) => ({
    event: "exception",
    data: { exception: "Throttled", message: detail?.message ?? "slow down" },
  }),
};

const NDJSON: Framing = {
  contentType: "application/x-ndjson",
  encode: (e) => `${JSON.stringify(e.data)}\n`,
  end: "",
};

export interface ToyCloud extends MockUpstream {
  /** Tokens minted so far. */
  minted: string[];
  /** Refuses every token minted so far (as if they expired). */
  expireTokens(): void;
}

export async function startToyCloud(): Promise<ToyCloud> {
  const minted: string[] = [];
  let valid = new Set<string>();
  const model = (m: RegExpMatchArray) => decodeURIComponent(m[1]);
  const operation = (op: string) => new RegExp(`^/t/${TOY_TENANT}/models/([^/]+)/${op}$`);
  const upstream = await startMockUpstream({
    platform: {
      endpoints: [
        { path: operation("generate"), vendor: toyMessages, model, framing: () => undefined },
        { path: operation("stream"), vendor: toyMessages, model, framing: () => NDJSON },
        {
          path: new RegExp(`^/t/${TOY_TENANT}/count$`),
          vendor: toyMessages,
          answer: () => ({ input_tokens: 7 }),
        },
      ],
      fallback: toyMessages,
      credential: (h) => h.get("authorization") ?? "",
      intercept(req, url, text) {
        if (url.pathname === "/token") {
          if (JSON.parse(text).secret !== TOY_SECRET) return new Response(null, { status: 403 });
          const token = `toy-token-${crypto.randomUUID()}`;
          minted.push(token);
          valid.add(token);
          return Response.json({ token });
        }
        const token = req.headers.get("authorization")?.match(/^Toy (.+)$/)?.[1];
        if (!token || !valid.has(token)) return new Response("expired", { status: 401 });
        if (url.pathname.includes("busy")) {
          return new Response("{}", { status: 500, headers: { "x-toy-error": "Busy" } });
        }
      },
    },
  });
  return Object.assign(upstream, {
    minted,
    expireTokens: () => void (valid = new Set()),
  });
}
