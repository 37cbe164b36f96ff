/**
 * The golden response and stream conversions again, end to end over loopback: a provider
 * that answers with the golden fixture's exact bytes, the real gateway in front of it, and a
 * client request in each other format. The client must receive the golden expectation.
 */
import assert from "node:assert/strict";
import { validateConfig } from "../src/config.ts";
import type { Api } from "../src/contract/ir.ts";
import { setAccessLogSink } from "../src/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import { bodies, FORMATS, INGRESS, KEY, post } from "./helpers.ts";

const ROOT = new URL("./golden/", import.meta.url);
const APIS: Api[] = ["chat", "responses", "messages", "generate-content"];
const INGRESS_API: Record<string, Api> = {
  chat: "chat",
  responses: "responses",
  messages: "messages",
  gemini: "generate-content",
};
/** The golden runner's decode context: its fallback id is this request id, alphanumerics only. */
const REQUEST_ID = "gwtest";

/** Timestamps come from the clock where the fixture has none. */
const normalize = (text: string) =>
  text.replace(/"(created|created_at|completed_at)":\s*\d+/g, '"$1":0');

/** Serves one fixed body for every request, as the provider would send it. */
function fixtureServer(body: () => string, contentType: string) {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(body(), { headers: { "content-type": contentType } }),
  );
}

async function gatewayFor(api: Api, upstream: string) {
  const base = api === "chat" || api === "responses" ? "/v1" : "";
  const config = validateConfig({
    keys: [{ name: "golden", key: KEY }],
    providers: [{ name: "fixture", api, base_url: upstream + base, api_key: "k" }],
    routes: [{ models: ["client-model"], provider: "fixture" }],
  });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    createHandler(await createGateway(config, FORMATS)),
  );
  return { url: `http://127.0.0.1:${server.addr.port}`, server };
}

function fixtures(dir: string, ext: string): { api: Api; name: string; file: URL }[] {
  return APIS.flatMap((api) => {
    const folder = new URL(`${dir}/${api}/`, ROOT);
    return [...Deno.readDirSync(folder)]
      .map((e) => e.name.match(new RegExp(`^([^.]+)\\${ext}$`))?.[1])
      .filter((name): name is string => name !== undefined)
      .sort()
      .map((name) => ({ api, name, file: new URL(`${name}${ext}`, folder) }));
  });
}

/**
 * A client request for the golden client context: model `client-model`, no extras (Responses
 * clients send `store: false`, so the response keeps the upstream's id and OpenAI's defaults).
 */
function clientRequest(ingress: (typeof INGRESS)[number], stream: boolean) {
  const body = ingress.name === "chat"
    ? bodies.chat("client-model", stream)
    : ingress.name === "responses"
    ? { ...bodies.responses("client-model", stream), store: false }
    : ingress.body("client-model", stream);
  return { path: ingress.path("client-model", stream), body };
}

/** The interruption the gateway appends when a fixture stops before its end marker. */
const INTERRUPTION =
  /(event: error\n)?data: \{"type":"upstream_interrupted".*\n\ndata: \[DONE\]\n\n$/s;

for (const [kind, ext] of [["responses", ".json"], ["streams", ".sse"]] as const) {
  const stream = kind === "streams";
  Deno.test(`golden over HTTP: ${kind}`, async (t) => {
    const previous = setAccessLogSink(() => {});
    let current = "";
    const upstream = fixtureServer(
      () => current,
      stream ? "text/event-stream" : "application/json",
    );
    const upstreamUrl = `http://127.0.0.1:${upstream.addr.port}`;
    try {
      for (const api of APIS) {
        const gw = await gatewayFor(api, upstreamUrl);
        try {
          for (const f of fixtures(kind, ext).filter((f) => f.api === api)) {
            for (const ingress of INGRESS.filter((i) => INGRESS_API[i.name] !== api)) {
              const target = INGRESS_API[ingress.name];
              await t.step(`${api}/${f.name} → ${target}`, async () => {
                current = Deno.readTextFileSync(f.file);
                const req = clientRequest(ingress, stream);
                const res = await post(gw.url + req.path, {
                  ...ingress.headers,
                  "x-kong-request-id": REQUEST_ID,
                }, req.body);
                const expected = Deno.readTextFileSync(
                  new URL(`${f.name}.${target}${ext}`, f.file),
                );
                if (!stream) {
                  assert.equal(res.status, 200);
                  return assert.deepEqual(
                    JSON.parse(normalize(await res.text())),
                    JSON.parse(normalize(expected)),
                  );
                }
                let text = await res.text();
                if (INTERRUPTION.test(text)) {
                  assert.match(f.name, /interrupted|cut/, "only cut fixtures are interrupted");
                  text = text.replace(INTERRUPTION, "");
                }
                assert.equal(normalize(text), normalize(expected));
              });
            }
          }
        } finally {
          await gw.server.shutdown();
        }
      }
    } finally {
      await upstream.shutdown();
      setAccessLogSink(previous);
    }
  });
}
