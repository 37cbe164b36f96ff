/**
 * Every byte from upstream is scrubbed. A provider of this file's own (not the shared mock)
 * echoes the credential it received everywhere it can: into every response header the gateway
 * may pass on and the retry hints of errors; into every kind of stream line (`id:`, `event:`,
 * `retry:`, comments, unknown fields, bare strings between Gemini's array elements); into error
 * bodies where the 64 KiB cut falls; and JSON-escaped (`\uXXXX`, `\/`) in bodies and events.
 * Its answers, streams and errors are each format's own, as the format's codec and dialect write
 * them, so every registered client format is tried against every registered provider format,
 * relayed and converted; no key, raw or in any spelling that decodes to it, may reach the
 * client, the access log or the metrics.
 */
import assert from "node:assert/strict";
import { createGateway, createHandler } from "../src/server.ts";
import { setAccessLogSink } from "../src/ops/log.ts";
import { GatewayError } from "../src/kit/errors.ts";
import type * as ir from "../src/kit/ir.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import {
  CLIENTS,
  FORMATS,
  INGRESS,
  type Ingress,
  MOCK_PROVIDERS,
  mockConfig,
  wsExchange,
} from "./helpers.ts";
import { concat, eventFrame } from "./mock/eventstream.ts";

/** A key with a `/` (spelled `\/` in JSON) and a `+` (percent-encoded in URLs). */
const SECRET = "sk-echo/Key+xyzzy0123456789abcdef";

/** The error body's cut: the key starts 10 bytes before it. */
const ERROR_CUT = 64 * 1024;

/** Every character as `\uXXXX` (upper-case hex). */
const unicodeEscaped = (k: string) =>
  [...k].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()}`).join("");

/** Every other character as `\uxxxx` (lower-case hex), `/` as `\/`. */
const mixedEscaped = (k: string) =>
  [...k].map((c, i) =>
    c === "/" ? "\\/" : i % 2 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}` : c
  ).join("");

/** The key's JSON spellings a client would decode into it, and the raw key. */
const spellings = (k: string) => [k, unicodeEscaped(k), mixedEscaped(k), k.replaceAll("/", "\\/")];

/** Where a spelling goes in a JSON text the provider writes (replaced after stringifying). */
const SLOT = "@@KEY@@";

/** A provider api (a registered format's id), read from the first segment of its base URL. */
type Api = string;

const GEMINI = "generate-content";
const CONVERSE = "converse";
const EVENT_STREAM = "application/vnd.amazon.eventstream";

/** Each format's whole answer saying `text`, as the format's own codec writes one. */
function answer(api: Api, model: string, text: string): Record<string, unknown> {
  const res: ir.Response = {
    id: "r1",
    model,
    created: 1,
    parts: [{ type: "text", text }],
    finish: "stop",
    usage: { inputTokens: 1, outputTokens: 1 },
  };
  return FORMATS.codec(api).encodeResponse(res, { model, id: "r1", now: () => 1 }) as Record<
    string,
    unknown
  >;
}

/** Each format's stream saying `text`, as its codec writes one: [event name, data] pairs. */
async function events(
  api: Api,
  model: string,
  text: string,
): Promise<[string | undefined, string][]> {
  const out: SseEvent[] = [];
  const encoder = FORMATS.codec(api).encodeStream({ model, id: "r1", now: () => 1 });
  for (
    const e of [
      { type: "start", id: "r1", model, created: 1 },
      { type: "part_start", index: 0, part: { type: "text" } },
      { type: "text_delta", index: 0, text },
      { type: "part_stop", index: 0 },
      { type: "finish", reason: "stop", usage: { inputTokens: 1, outputTokens: 1 } },
    ] satisfies ir.StreamEvent[]
  ) await encoder.transform(e, { enqueue: (sse) => out.push(sse) });
  return out.map((e) => [e.event, e.data]);
}

/** Each format's error envelope saying `message`, as its dialect writes one. */
function errorBody(api: Api, status: number, message: string): unknown {
  const kind = status === 429 ? "rate_limit" : "invalid_request";
  return FORMATS.get(api)!.dialect!.errorBody(new GatewayError(status, kind, message));
}

/** Every header a relay may pass on, each holding the key. */
function echoHeaders(key: string): Record<string, string> {
  return Object.fromEntries(
    [
      "x-request-id",
      "request-id",
      "x-ratelimit-remaining-requests",
      "openai-version",
      "openai-model",
      "anthropic-ratelimit-requests-remaining",
      "x-codex-primary-used-percent",
      "x-models-etag",
    ].map((name, i) => [name, spellings(key)[i % 2 ? 1 : 0]]),
  );
}

/** The faults, by the model name's last word. */
type Fault = "headers" | "escaped" | "lines" | "errheaders" | "errgood" | "errcut" | "erresc";

/**
 * The echoing provider. `headers`: a success whose headers hold the key; `escaped`: a success
 * (or stream) whose text holds every JSON spelling of it; `lines`: a stream with the key in
 * every line kind besides `data:`; `errheaders`: a 429 whose retry hints hold it; `errgood`: a
 * 429 with well-formed retry hints; `errcut`: an HTML error whose key straddles the 64 KiB cut;
 * `erresc`: a JSON 400 quoting the escaped key (a 401 would be the gateway's own 502: its credential
 * refused, no provider text relayed).
 */
function startProvider() {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const key = req.headers.get("authorization")?.replace(/^Bearer /, "") ??
      req.headers.get("x-api-key") ?? req.headers.get("x-goog-api-key") ?? "";
    if (req.headers.get("upgrade") === "websocket") return echoingSocket(req, key);
    const api = url.pathname.split("/")[1];
    const body = await req.json();
    // The model: in the body, or in the path (Gemini's `models/…:action`, Bedrock's `model/…/`).
    const model: string = body.model ?? url.pathname.match(/models\/([^:]+)/)?.[1] ??
      decodeURIComponent(url.pathname.match(/\/model\/([^/]+)\//)?.[1] ?? "");
    const fault = model.split("-").at(-1) as Fault;
    const stream = body.stream === true || url.pathname.includes(":streamGenerateContent") ||
      url.pathname.endsWith("/converse-stream");
    const fill = (json: unknown) => {
      const all = spellings(key).join(" and ");
      return JSON.stringify(json).replaceAll(SLOT, all);
    };
    switch (fault) {
      case "errheaders":
      case "errgood": {
        const good = fault === "errgood";
        const headers = {
          "content-type": "application/json",
          "x-request-id": key,
          "retry-after": good ? "1" : key,
          "retry-after-ms": good ? "250" : key,
          "x-should-retry": good ? "false" : spellings(key)[1],
        };
        return new Response(fill(errorBody(api, 429, "slow down")), { status: 429, headers });
      }
      case "errcut": {
        // The client's text (the padding) places the key across the cut; the tag goes, its text stays.
        const open = `<html><body><p title="`;
        const pad = "x".repeat(ERROR_CUT - 10 - open.length - 2);
        const html = `${open}${pad}">${key} was refused</p></body></html>`;
        return new Response(html, { status: 502, headers: { "content-type": "text/html" } });
      }
      case "erresc": {
        const json = fill(errorBody(api, 400, `invalid header value: ${SLOT}`));
        return new Response(json, { status: 400, headers: { "content-type": "application/json" } });
      }
    }
    const headers = {
      ...(fault === "headers" && echoHeaders(key)),
      "content-type": stream
        ? (api === GEMINI && !url.searchParams.has("alt")
          ? "application/json"
          : api === CONVERSE
          ? EVENT_STREAM
          : "text/event-stream")
        : "application/json",
    };
    const text = fault === "escaped" ? `echo: ${SLOT}` : "hello";
    if (!stream) return new Response(fill(answer(api, model, text)), { headers });
    return new Response(await streamText(api, model, text, key, fault, url), { headers });
  });
}

/** A Responses WebSocket answering each `response.create` with the key in every spelling. */
function echoingSocket(req: Request, key: string): Response {
  const { socket, response } = Deno.upgradeWebSocket(req);
  socket.onmessage = async (e) => {
    const { model } = JSON.parse(e.data);
    const all = spellings(key).join(" and ");
    for (const [, data] of await events("responses", model, `echo: ${SLOT}`)) {
      socket.send(data.replaceAll(SLOT, all));
    }
  };
  return response;
}

/** A whole stream's text, with the key in every line kind for `lines`. */
async function streamText(
  api: Api,
  model: string,
  text: string,
  key: string,
  fault: Fault,
  url: URL,
) {
  const all = spellings(key).join(" and ");
  const list = (await events(api, model, text)).map(([name, data]) =>
    [name, data.replaceAll(SLOT, all)] as const
  );
  const lines = fault === "lines";
  if (api === CONVERSE) {
    // No lines in an event stream: for `lines`, frames of an unknown event, the key in the name
    // and the payload, raw and escaped.
    const extra = lines ? spellings(key).map((s) => eventFrame(`x-${key}`, `{"note":"${s}"}`)) : [];
    return concat([...extra, ...list.map(([name, data]) => eventFrame(name!, data)), ...extra]);
  }
  if (api === GEMINI && !url.searchParams.has("alt")) {
    // Bare strings between the elements, raw and escaped.
    const extra = lines ? spellings(key).map((s) => `"${s}"`) : [];
    return `[${[...extra, ...list.map(([, d]) => d), ...extra].join(",\r\n")}]`;
  }
  const eol = api === GEMINI ? "\r\n" : "\n";
  const records = list.map(([name, data]) => {
    const fields = [
      ...(lines ? [`id: ${key}`, `: ${key}`, `x-unknown-field: ${key}`, `retry: ${key}`] : []),
      ...(name ? [`event: ${name}`] : []),
      `data: ${data}`,
    ];
    return fields.join(eol) + eol + eol;
  });
  // A record with no data at all, naming the key as its event.
  const dataless = lines ? `event: ${key}${eol}: ${spellings(key)[1]}${eol}${eol}` : "";
  return dataless + records.join("");
}

/** The decoded forms of a text a client could read the key from. */
function readings(text: string): string[] {
  const unescaped = text
    .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)))
    .replaceAll("\\/", "/");
  let unquoted = text;
  try {
    unquoted = decodeURIComponent(text);
  } catch { /* not percent-encoded */ }
  return [text, unescaped, unquoted];
}

/** Whether any 10 characters of the key appear in any reading of `text`. */
function leaks(text: string): string | undefined {
  for (const reading of readings(text)) {
    for (let i = 0; i + 10 <= SECRET.length; i++) {
      if (reading.includes(SECRET.slice(i, i + 10))) return SECRET.slice(i, i + 10);
    }
  }
  return undefined;
}

interface Seen {
  status: number;
  headers: Headers;
  body: string;
}

async function harness() {
  const provider = startProvider();
  const config = await mockConfig(`http://127.0.0.1:${provider.addr.port}`, {
    first_byte_ms: 5000,
    idle_ms: 5000,
  });
  for (const p of config.providers) {
    if (!p.api_key) continue;
    p.api_key = SECRET;
    // The first segment of the path tells the provider which format it speaks.
    p.base_url = p.base_url!.replace(/^(http:\/\/[^/]+)/, `$1/${p.api}`);
  }
  config.metrics = { hostname: "127.0.0.1", port: 0, max_label_values: 1000 };
  const gw = await createGateway(config, FORMATS);
  const logs: string[] = [];
  const previous = setAccessLogSink((line) => logs.push(line));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, createHandler(gw));
  const base = `http://127.0.0.1:${server.addr.port}`;
  return {
    url: base,
    logs,
    metrics: () => gw.metrics.expose(),
    async call(c: Ingress, model: string, stream: boolean, array = false): Promise<Seen> {
      let path = c.path(model, stream);
      if (array) path = path.replace("?alt=sse", "");
      const res = await fetch(base + path, {
        method: "POST",
        headers: c.headers,
        body: JSON.stringify(c.body(model, stream)),
      });
      // A binary stream is read as its client reads it: the events (a frame's base64 unwrapped).
      const body = stream && res.status === 200
        ? c.streamText(new Uint8Array(await res.arrayBuffer()))
        : await res.text();
      return { status: res.status, headers: res.headers, body };
    },
    async close() {
      await server.shutdown();
      await gw.store.close();
      await provider.shutdown();
      setAccessLogSink(previous);
    },
  };
}

function assertClean(seen: Seen, label: string) {
  const headers = JSON.stringify([...seen.headers]);
  assert.equal(leaks(headers), undefined, `${label}: key in a header: ${headers}`);
  assert.equal(leaks(seen.body), undefined, `${label}: key in the body: ${seen.body.slice(-400)}`);
}

/** Every client format (Vertex's too) against every provider format (relayed on its wire). */
async function everyPair(
  check: (c: Ingress, p: string, relayed: boolean) => Promise<void>,
) {
  for (const c of CLIENTS) {
    for (const p of MOCK_PROVIDERS) {
      await check(c, p.prefix, p.api === c.wire);
    }
  }
}

Deno.test("scrub: no provider key reaches a client, the log or the metrics, in any spelling", async (t) => {
  const h = await harness();
  try {
    await t.step("headers of successes: scrubbed, JSON and stream", async () => {
      await everyPair(async (c, p, relayed) => {
        for (const stream of [false, true]) {
          const label = `${c.name} → ${p} headers stream=${stream}`;
          const seen = await h.call(c, `${p}-headers`, stream);
          assert.equal(seen.status, 200, `${label}: ${seen.body}`);
          assertClean(seen, label);
          if (relayed) assert.equal(seen.headers.get("x-request-id"), "[redacted]", label);
        }
      });
    });

    await t.step(
      "retry hints of errors: malformed ones dropped, well-formed ones kept",
      async () => {
        await everyPair(async (c, p) => {
          for (const stream of [false, true]) {
            const label = `${c.name} → ${p} stream=${stream}`;
            const bad = await h.call(c, `${p}-errheaders`, stream);
            assert.equal(bad.status, 429, `${label}: ${bad.body}`);
            assertClean(bad, label);
            assert.equal(bad.headers.get("retry-after"), null, label);
            assert.equal(bad.headers.get("retry-after-ms"), null, label);
            assert.equal(bad.headers.get("x-should-retry"), null, label);
            const good = await h.call(c, `${p}-errgood`, stream);
            assert.equal(good.status, 429, label);
            assert.equal(good.headers.get("retry-after"), "1", label);
            assert.equal(good.headers.get("retry-after-ms"), "250", label);
            assert.equal(good.headers.get("x-should-retry"), "false", label);
          }
        });
      },
    );

    await t.step(
      "JSON-escaped keys in successes and streams: scrubbed before decoding",
      async () => {
        await everyPair(async (c, p) => {
          for (const stream of [false, true]) {
            const label = `${c.name} → ${p} escaped stream=${stream}`;
            const seen = await h.call(c, `${p}-escaped`, stream);
            assert.equal(seen.status, 200, `${label}: ${seen.body}`);
            assertClean(seen, label);
            // The text went through (scrubbed), not an error instead of it.
            assert.match(readings(seen.body)[1], /echo: \[redacted\] and \[redacted\]/, label);
          }
        });
      },
    );

    await t.step("every stream line kind, and bare strings in Gemini's array", async () => {
      await everyPair(async (c, p, relayed) => {
        const label = `${c.name} → ${p} lines`;
        const seen = await h.call(c, `${p}-lines`, true);
        assert.equal(seen.status, 200, `${label}: ${seen.body}`);
        assertClean(seen, label);
        assert.match(seen.body, /hello/, label);
        // Lines besides the events reach only clients of the provider's own SSE.
        if (relayed && !c.binary) assert.match(seen.body, /id: \[redacted\]/, label);
        if (c.name === "generate-content") {
          const array = await h.call(c, `${p}-lines`, true, true);
          assertClean(array, `${label} (JSON array)`);
          const elements = JSON.parse(array.body);
          assert.ok(Array.isArray(elements), label);
          if (relayed) assert.equal(elements[0], "[redacted]", label);
        }
      });
    });

    await t.step("error bodies: a key across the 64 KiB cut, JSON-escaped keys", async () => {
      await everyPair(async (c, p) => {
        for (const stream of [false, true]) {
          const label = `${c.name} → ${p} stream=${stream}`;
          const cut = await h.call(c, `${p}-errcut`, stream);
          assert.equal(cut.status, 502, `${label}: ${cut.body.slice(0, 300)}`);
          assertClean(cut, `${label} errcut`);
          const escaped = await h.call(c, `${p}-erresc`, stream);
          assert.equal(escaped.status, 400, `${label}: ${escaped.body}`);
          assertClean(escaped, `${label} erresc`);
          assert.match(readings(escaped.body)[1], /\[redacted\]/, label);
        }
      });
    });

    await t.step("the access log and the metrics", () => {
      assert.ok(h.logs.length > 100, `${h.logs.length} log lines`);
      const log = h.logs.join("\n");
      assert.equal(leaks(log), undefined, "key in the access log");
      assert.equal(leaks(h.metrics()), undefined, "key in the metrics");
    });
  } finally {
    await h.close();
  }
});

Deno.test("scrub: a passthrough WebSocket's frames lose every spelling of the key", async () => {
  const h = await harness();
  try {
    const [frames] = await wsExchange(h.url, [{
      type: "response.create",
      model: "pt-ws",
      input: "hi",
    }]);
    const seen = JSON.stringify(frames);
    assert.equal(frames.at(-1)?.type, "response.completed", seen);
    assert.equal(leaks(seen), undefined, seen);
    assert.match(readings(seen)[1], /echo: \[redacted\] and \[redacted\]/);
    assert.equal(leaks(h.logs.join("\n")), undefined, "key in the access log");
  } finally {
    await h.close();
  }
});

Deno.test("log lines: line separators and bidirectional controls are escaped, not raw", async () => {
  const h = await harness();
  try {
    const deceptive = "\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069";
    const model = `nowhere-${deceptive}-model`;
    const seen = await h.call(INGRESS[0], model, false);
    assert.equal(seen.status, 404, seen.body);
    const line = h.logs.find((l) => l.includes("nowhere-"));
    assert.ok(line, h.logs.join("\n"));
    assert.doesNotMatch(line, /[\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    // Escaped, not lost: the line still reads back to the text.
    assert.ok(Object.values(JSON.parse(line)).some((v) => String(v).includes(deceptive)), line);
  } finally {
    await h.close();
  }
});
