/**
 * The golden response and stream conversions again, end to end over loopback: a provider
 * that answers with the golden fixture's exact bytes, the real gateway in front of it, and a
 * client request in each other format under test. The client must receive the golden
 * expectation. tests/golden_http_test.ts replays tests/golden/ across the registered formats.
 */
import assert from "node:assert/strict";
import { validateConfig } from "../src/config/config.ts";
import { setAccessLogSink } from "../src/ops/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import { sseFraming } from "../src/request/stream_stage.ts";
import { speaksUpstream, type TestFormat } from "./formats.ts";
import { expectation, goldenCases } from "./golden_runner.ts";
import { KEY, post } from "./helpers.ts";

/** The golden runner's decode context: its fallback id is this request id, alphanumerics only. */
const REQUEST_ID = "gwtest";
const MODEL = "client-model";

/** Timestamps come from the clock where the fixture has none. */
// Times are the gateway's clock: epoch seconds, or ISO strings (Interactions' created/updated).
const normalize = (text: string) =>
  text.replace(/"(created|created_at|completed_at)":\s*\d+/g, '"$1":0')
    .replace(/"(created|updated)":\s*"\d{4}-\d\d-\d\dT[\d:]+Z"/g, '"$1":0');

/** Serves one fixed body for every request, as the provider would send it. */
function fixtureServer(body: () => { text: string; type: string }) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    const { text, type } = body();
    return new Response(text, { headers: { "content-type": type } });
  });
}

async function gatewayFor(format: TestFormat, formats: readonly TestFormat[], upstream: string) {
  const config = validateConfig({
    keys: [{ name: "golden", key: KEY }],
    providers: [{
      name: "fixture",
      api: format.id,
      base_url: upstream + (format.providerBase ?? ""),
      api_key: "k",
    }],
    routes: [{ models: [MODEL], provider: "fixture" }],
  });
  const plugins = formats.map((f) => f.plugin);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    createHandler(await createGateway(config, plugins)),
  );
  return { url: `http://127.0.0.1:${server.addr.port}`, server };
}

/**
 * Where the interruption the gateway appends to a fixture cut before its end marker starts:
 * the opening of the client dialect's own interruption text.
 */
function interruptionAt(format: TestFormat, text: string): number {
  const marked = format.plugin.dialect.interruption("@@");
  return text.lastIndexOf(marked.slice(0, marked.indexOf("@@")));
}

/** Registers the replay of `root`'s response and stream fixtures across `formats`. */
export function goldenReplay(root: URL, formats: readonly TestFormat[], title = "golden") {
  for (const kind of ["responses", "streams"] as const) {
    const stream = kind === "streams";
    const ext = (f: TestFormat) => stream ? f.streams.ext : ".json";
    Deno.test(`${title} over HTTP: ${kind}`, async (t) => {
      const previous = setAccessLogSink(() => {});
      let current = { text: "", type: "" };
      const upstream = fixtureServer(() => current);
      const upstreamUrl = `http://127.0.0.1:${upstream.addr.port}`;
      try {
        for (const format of formats.filter(speaksUpstream)) {
          const type = stream
            ? (format.plugin.upstream?.framing?.() ?? sseFraming()).mediaType
            : "application/json";
          const gw = await gatewayFor(format, formats, upstreamUrl);
          try {
            for (const f of goldenCases(root, kind, [format], ext)) {
              // A client whose wire is the provider's is relayed its bytes, not converted.
              const converted = formats.filter((i) => i.plugin.codec.api !== format.id);
              for (const ingress of converted) {
                await t.step(`${format.id}/${f.name} → ${ingress.id}`, async () => {
                  current = { text: Deno.readTextFileSync(f.file), type };
                  const client = ingress.client;
                  const res = await post(gw.url + client.path(MODEL, stream), {
                    ...client.headers(KEY),
                    "x-kong-request-id": REQUEST_ID,
                  }, client.body(MODEL, stream));
                  const expected = Deno.readTextFileSync(expectation(f, ingress.id, ext(ingress)));
                  if (!stream) {
                    assert.equal(res.status, 200);
                    return assert.deepEqual(
                      JSON.parse(normalize(await res.text())),
                      JSON.parse(normalize(expected)),
                    );
                  }
                  let text = await res.text();
                  const cut = interruptionAt(ingress, text);
                  if (cut >= 0) {
                    assert.match(f.name, /interrupted|cut/, "only cut fixtures are interrupted");
                    text = text.slice(0, cut);
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
}
