/**
 * Golden conversion tests: data, not code. Each case file is an input; beside it, one
 * expected output per target format. `deno task golden:update` rewrites the expectations
 * (review them in the diff).
 *
 * - requests/<ingress>/<case>.json = {model, body} → <case>.<target>.json =
 *   {path, body, dropped?} | {error}
 * - responses/<upstream>/<case>.json = upstream body → <case>.<ingress>.json = client body
 * - streams/<upstream>/<case>.sse = upstream SSE → <case>.<ingress>.sse = client SSE
 *
 * tests/golden_http_test.ts replays the response and stream fixtures through the running
 * gateway from a loopback provider, so every converted pair is also checked end to end.
 */
import assert from "node:assert/strict";
import { PLUGINS } from "../plugins/mod.ts";
import type { Codec } from "../src/contract/codec.ts";
import type { Api } from "../src/contract/ir.ts";
import { GatewayError } from "../src/contract/errors.ts";
// Test-only, so not in the import map (which `deno task dev/start` installs whole).
// deno-lint-ignore no-import-prefix
import { EventSourceParserStream } from "npm:eventsource-parser@4.1.3/stream";
import { formatSse, type SseEvent } from "../src/contract/sse.ts";
import { sseFraming } from "../src/stream_stage.ts";

const ROOT = new URL("./golden/", import.meta.url);
const UPDATE = Deno.env.get("GOLDEN_UPDATE") === "1";
const CODECS: Record<Api, Codec> = Object.fromEntries(PLUGINS.map((p) => [p.id, p.codec]));
const APIS = Object.keys(CODECS);
const DECODE = { now: 1700000000, id: "gwtest" };
const CLIENT = { model: "client-model", now: () => DECODE.now };

function cases(dir: string, ext: string): { api: Api; name: string; file: URL }[] {
  const out = [];
  for (const api of APIS) {
    const folder = new URL(`${dir}/${api}/`, ROOT);
    let entries: Deno.DirEntry[] = [];
    try {
      entries = [...Deno.readDirSync(folder)];
    } catch {
      continue;
    }
    for (const e of entries) {
      const m = e.name.match(new RegExp(`^([^.]+)\\${ext}$`));
      if (m) out.push({ api, name: m[1], file: new URL(e.name, folder) });
    }
  }
  return out.sort((a, b) => a.file.href.localeCompare(b.file.href));
}

function check(file: URL, actual: string) {
  if (UPDATE) return Deno.writeTextFileSync(file, actual);
  let expected: string;
  try {
    expected = Deno.readTextFileSync(file);
  } catch {
    throw new Error(`missing golden ${file.pathname} (run deno task golden:update)`);
  }
  assert.deepEqual(actual, expected, file.pathname);
}

const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n";

async function collect(stream: ReadableStream<string>): Promise<string> {
  return (await Array.fromAsync(stream)).join("");
}

Deno.test("golden: request conversion", async (t) => {
  for (const c of cases("requests", ".json")) {
    const input = JSON.parse(Deno.readTextFileSync(c.file));
    for (const target of APIS) {
      await t.step(`${c.api}/${c.name} → ${target}`, () => {
        let out: unknown;
        try {
          const req = CODECS[c.api].decodeRequest(input.body, input.model);
          const codec = CODECS[target];
          const ctx = {
            model: "upstream-model",
            route: `"test-*" → up (${target})`,
            defaultMaxTokens: 4096,
            dropped: [] as string[],
          };
          const body = codec.encodeRequest(req, ctx);
          out = {
            path: codec.path(ctx.model, req.stream),
            body,
            ...(ctx.dropped.length && { dropped: ctx.dropped }),
          };
        } catch (e) {
          if (!(e instanceof GatewayError)) throw e;
          out = { error: { status: e.status, message: e.message } };
        }
        check(new URL(`${c.file.href.slice(0, -5)}.${target}.json`), json(out));
      });
    }
  }
});

Deno.test("golden: response conversion", async (t) => {
  for (const c of cases("responses", ".json")) {
    const body = JSON.parse(Deno.readTextFileSync(c.file));
    const res = CODECS[c.api].decodeResponse(body, DECODE);
    for (const ingress of APIS) {
      await t.step(`${c.api}/${c.name} → ${ingress}`, () => {
        const out = CODECS[ingress].encodeResponse(res, CLIENT);
        check(new URL(`${c.file.href.slice(0, -5)}.${ingress}.json`), json(out));
      });
    }
  }
});

Deno.test("golden: stream conversion", async (t) => {
  for (const c of cases("streams", ".sse")) {
    const text = Deno.readTextFileSync(c.file);
    for (const ingress of APIS) {
      await t.step(`${c.api}/${c.name} → ${ingress}`, async () => {
        const events = parseSse(text)
          .pipeThrough(new TransformStream(CODECS[c.api].decodeStream(DECODE)))
          .pipeThrough(new TransformStream(CODECS[ingress].encodeStream(CLIENT)))
          .pipeThrough(new TransformStream({ transform: (e, out) => out.enqueue(formatSse(e)) }));
        check(new URL(`${c.file.href.slice(0, -4)}.${ingress}.sse`), await collect(events));
      });
    }
  }
});

/** The reference SSE parser (eventsource-parser handles every framing edge case). */
function parseSse(text: string): ReadableStream<SseEvent> {
  return new Response(text).body!.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
}

Deno.test("golden: the relay's SSE splitter agrees with eventsource-parser", async (t) => {
  for (const c of cases("streams", ".sse")) {
    await t.step(`${c.api}/${c.name}`, async () => {
      const text = Deno.readTextFileSync(c.file);
      const want = (await Array.fromAsync(parseSse(text))).map(({ event, data }) => ({
        ...(event && { event }),
        data,
      }));
      const bytes = new TextEncoder().encode(text);
      // Split at every byte: the scanner must find the same events however chunks fall.
      for (const at of [1, 7, bytes.length]) {
        const framing = sseFraming();
        const got: SseEvent[] = [];
        let held = new Uint8Array();
        for (let i = 0; i < bytes.length; i += at) {
          const buf = new Uint8Array([...held, ...bytes.subarray(i, i + at)]);
          const scan = framing.scan(buf, held.length, (b) => new TextDecoder().decode(b));
          got.push(...scan.events);
          held = buf.slice(scan.cut);
        }
        const clean = got.map(({ event, data }) => ({ ...(event && { event }), data }));
        assert.deepEqual(clean, want, `chunks of ${at} bytes`);
      }
    });
  }
});
