/**
 * Golden conversion tests: data, not code. Each case file is an input; beside it, one
 * expected output per target format, for every format under test. `deno task golden:update`
 * rewrites the expectations (review them in the diff).
 *
 * - requests/<ingress>/<case>.json = {model, body} → <case>.<target>.json =
 *   {path, body, dropped?} | {error}
 * - responses/<upstream>/<case>.json = upstream body → <case>.<ingress>.json = client body
 * - streams/<upstream>/<case><ext> = upstream stream in that format's framing →
 *   <case>.<ingress><ext of ingress> = client stream (`.sse` for server-sent events)
 *
 * The folders are named by format id. A format only providers speak (Converse) is a target of
 * every request case and a source of response and stream cases, never a client; a format only
 * clients speak (Vertex AI's) is a client and the source of request cases, never a target. Its stream
 * fixtures may be readable text that its `streams.bytes` frames. tests/golden_test.ts runs the
 * registered formats over tests/golden/; a format outside the registry runs its own cases with the registered ones
 * (tests/toy_format/golden_test.ts). tests/golden_http_test.ts replays the response and
 * stream fixtures through the running gateway.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../src/kit/errors.ts";
// Test-only, so not in the import map (which `deno task dev/start` installs whole).
// deno-lint-ignore no-import-prefix
import { EventSourceParserStream } from "npm:eventsource-parser@4.1.3/stream";
import { formatSse, type SseEvent } from "../src/kit/sse.ts";
import { sseFraming } from "../src/request/stream_stage.ts";
import { speaksUpstream, type TestFormat, type UpstreamFormat } from "./formats.ts";

const UPDATE = Deno.env.get("GOLDEN_UPDATE") === "1";
const DECODE = { now: 1700000000, id: "gwtest" };
const CLIENT = { model: "client-model", now: () => DECODE.now };

export interface GoldenCase<F extends UpstreamFormat = UpstreamFormat> {
  format: F;
  name: string;
  file: URL;
}

/** The case files under `root/<dir>/<id>/`, `ext` chosen per format; sorted by path. */
export function goldenCases<F extends UpstreamFormat>(
  root: URL,
  dir: string,
  formats: readonly F[],
  ext: (f: F) => string,
): GoldenCase<F>[] {
  const out: GoldenCase<F>[] = [];
  for (const format of formats) {
    const folder = new URL(`${dir}/${format.id}/`, root);
    let entries: Deno.DirEntry[] = [];
    try {
      entries = [...Deno.readDirSync(folder)];
    } catch {
      continue;
    }
    const suffix = ext(format);
    for (const e of entries) {
      // `<case><ext>` with no dot in the case name: expectations (`<case>.<id><ext>`) are not cases.
      const name = e.name.endsWith(suffix) && e.name.slice(0, -suffix.length);
      if (name && !name.includes(".")) out.push({ format, name, file: new URL(e.name, folder) });
    }
  }
  return out.sort((a, b) => a.file.href.localeCompare(b.file.href));
}

/** The expectation beside a case for `target`: `<case>.<target id><ext>`. */
export const expectation = (c: GoldenCase, target: string, ext: string) =>
  new URL(`${c.name}.${target}${ext}`, c.file);

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

/** An upstream stream fixture's events, as the format's own framing divides them. */
function upstreamEvents(format: UpstreamFormat, text: string): ReadableStream<SseEvent> {
  const framing = format.plugin.upstream?.framing?.() ?? sseFraming();
  const decoder = new TextDecoder();
  const bytes = format.streams.bytes?.(text) ?? new TextEncoder().encode(text);
  const { events } = framing.scan(bytes, 0, (b) => decoder.decode(b));
  return ReadableStream.from(events);
}

/**
 * Registers the golden tests over `root` for every pair of `formats`, and from every client
 * format to each of `upstreamOnly` and back, named `<title>: …`.
 */
export function goldenSuite(
  root: URL,
  formats: readonly TestFormat[],
  title = "golden",
  upstreamOnly: readonly UpstreamFormat[] = [],
) {
  const jsonExt = () => ".json";
  const streamExt = (f: UpstreamFormat) => f.streams.ext;
  const upstreams = [...formats.filter(speaksUpstream), ...upstreamOnly];

  Deno.test(`${title}: request conversion`, async (t) => {
    for (const c of goldenCases(root, "requests", formats, jsonExt)) {
      const input = JSON.parse(Deno.readTextFileSync(c.file));
      for (const target of upstreams) {
        await t.step(`${c.format.id}/${c.name} → ${target.id}`, () => {
          let out: unknown;
          try {
            const req = c.format.plugin.codec.decodeRequest(input.body, input.model);
            const codec = target.plugin.codec;
            const ctx = {
              model: "upstream-model",
              route: `"test-*" → up (${target.id})`,
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
          check(expectation(c, target.id, ".json"), json(out));
        });
      }
    }
  });

  Deno.test(`${title}: response conversion`, async (t) => {
    for (const c of goldenCases(root, "responses", upstreams, jsonExt)) {
      const body = JSON.parse(Deno.readTextFileSync(c.file));
      const res = c.format.plugin.codec.decodeResponse(body, DECODE);
      for (const ingress of formats) {
        await t.step(`${c.format.id}/${c.name} → ${ingress.id}`, () => {
          const out = ingress.plugin.codec.encodeResponse(res, CLIENT);
          check(expectation(c, ingress.id, ".json"), json(out));
        });
      }
    }
  });

  Deno.test(`${title}: stream conversion`, async (t) => {
    for (const c of goldenCases(root, "streams", upstreams, streamExt)) {
      const text = Deno.readTextFileSync(c.file);
      for (const ingress of formats) {
        await t.step(`${c.format.id}/${c.name} → ${ingress.id}`, async () => {
          const serialize = ingress.streams.framing?.open().write ?? formatSse;
          const events = upstreamEvents(c.format, text)
            .pipeThrough(new TransformStream(c.format.plugin.codec.decodeStream(DECODE)))
            .pipeThrough(new TransformStream(ingress.plugin.codec.encodeStream(CLIENT)))
            .pipeThrough(new TransformStream({ transform: (e, out) => out.enqueue(serialize(e)) }));
          const actual = (await Array.fromAsync(events)).join("");
          check(expectation(c, ingress.id, ingress.streams.ext), actual);
        });
      }
    }
  });

  Deno.test(`${title}: the relay's SSE splitter agrees with eventsource-parser`, async (t) => {
    const sse = formats.filter((f) => f.streams.ext === ".sse");
    for (const c of goldenCases(root, "streams", sse, streamExt)) {
      await t.step(`${c.format.id}/${c.name}`, async () => {
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
}

/** The reference SSE parser (eventsource-parser handles every framing edge case). */
function parseSse(text: string): ReadableStream<SseEvent> {
  return new Response(text).body!.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
}
