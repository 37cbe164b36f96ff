/**
 * A request body has a deadline (`request_body_timeout_ms`): a client that sends its headers and
 * part of its body, then stalls, gets a 408 in its own dialect naming the setting, is logged as
 * its own slowness (not a gateway 500), and the gateway goes on serving.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { pairsOf, readJsonBody } from "../src/kit/http.ts";
import { GatewayError } from "../src/kit/errors.ts";
import {
  CLIENTS,
  envelopeMessage,
  type Harness,
  KEY,
  openaiHeaders,
  post,
  startHarness,
} from "./helpers.ts";
import { bodies } from "./requests.ts";

const DEADLINE_MS = 300;
const DEADLINE = new RegExp(`request_body_timeout_ms \\(${DEADLINE_MS} ms\\)`);

/**
 * Sends `head` and `part` of a body on a raw connection, then nothing more; the answer the
 * gateway gives meanwhile (status and JSON body), or a failure if none came within 5 s.
 */
async function stall(h: Harness, head: string, part: Uint8Array | string) {
  const { port } = new URL(h.url);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
  const sent = typeof part === "string" ? new TextEncoder().encode(part) : part;
  const bytes = new Uint8Array([...new TextEncoder().encode(head + "\r\n"), ...sent]);
  const started = performance.now();
  try {
    for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
    let text = "";
    const buf = new Uint8Array(64 * 1024);
    const timer = setTimeout(() => conn.close(), 5000);
    try {
      // Until the whole answer is in (it says its length).
      while (!complete(text)) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
    } finally {
      clearTimeout(timer);
    }
    assert.ok(complete(text), `no answer within 5 s: ${JSON.stringify(text)}`);
    const status = Number(text.match(/^HTTP\/1\.1 (\d{3})/)?.[1]);
    const json = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4));
    return {
      status,
      json,
      elapsed: performance.now() - started,
      headers: text.split("\r\n\r\n")[0],
    };
  } finally {
    try {
      conn.close();
    } catch { /* closed by the timer */ }
  }
}

function complete(text: string): boolean {
  const end = text.indexOf("\r\n\r\n");
  const length = Number(text.slice(0, end).match(/content-length: (\d+)/i)?.[1]);
  return end >= 0 && text.length >= end + 4 + length;
}

function requestHead(path: string, headers: Record<string, string>, framing: string[]): string {
  const lines = [`POST ${path} HTTP/1.1`, "host: x", "content-type: application/json", ...framing];
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== "content-type") lines.push(`${name}: ${value}`);
  }
  return lines.join("\r\n") + "\r\n";
}

async function withGateway(run: (h: Harness) => Promise<void>) {
  const h = await startHarness({
    tweak: (config) => void (config.request_body_timeout_ms = DEADLINE_MS),
  });
  try {
    await run(h);
  } finally {
    await h.close();
  }
}

/** The last access-log line, once the gateway wrote it. */
async function lastLog(h: Harness) {
  for (let i = 0; i < 100 && h.logs.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  return h.logs.at(-1);
}

Deno.test("a stalled body is a 408 in every client format's dialect, and the gateway serves on", async () => {
  await withGateway(async (h) => {
    for (const c of CLIENTS) {
      const path = c.path(c.model, false);
      const text = JSON.stringify(c.body(c.model, false));
      const half = text.slice(0, text.length >> 1);
      h.logs.length = 0;
      const head = requestHead(path, c.headers, [`content-length: ${text.length}`]);
      const { status, json, elapsed } = await stall(h, head, half);
      assert.equal(status, 408, `${c.name}: ${JSON.stringify(json)}`);
      assert.match(envelopeMessage(c, json, "invalid_request"), DEADLINE, c.name);
      assert.ok(elapsed >= DEADLINE_MS - 20, `${c.name}: answered after ${elapsed} ms`);
      const line = await lastLog(h);
      assert.equal(line?.status, 408, `${c.name}: ${JSON.stringify(line)}`);
      assert.doesNotMatch(String(line?.error ?? ""), /internal gateway error/);
      // The same request sent whole is served.
      const res = await post(h.url + path, c.headers, text);
      const answer = await res.text();
      assert.equal(res.status, 200, `${c.name} after the stall: ${answer}`);
    }
  });
});

Deno.test("every way of sending a body has the deadline: large declared, chunked, compressed, signed", async () => {
  await withGateway(async (h) => {
    const chat = "/v1/chat/completions";
    const auth = { authorization: `Bearer ${KEY}` };
    const gzipped = gzipSync(JSON.stringify(bodies.chat("chat-text")));
    const cases: [string, string, Uint8Array | string][] = [
      // Past the size Deno's whole read takes: read in chunks, dropped at the deadline.
      [
        "declared 8 MiB",
        requestHead(chat, auth, [`content-length: ${8 * 1024 * 1024}`]),
        '{"model":"chat-text","messages":[' + " ".repeat(256 * 1024),
      ],
      [
        "chunked",
        requestHead(chat, auth, ["transfer-encoding: chunked"]),
        '15\r\n{"model":"chat-text",\r\n',
      ],
      [
        "gzip",
        requestHead(chat, auth, ["content-encoding: gzip", `content-length: ${gzipped.length}`]),
        gzipped.subarray(0, gzipped.length >> 1),
      ],
      [
        // An AWS SigV4 request: its body is read (for the signature) before anything else.
        "signed",
        requestHead("/model/converse-text/converse", {
          authorization: `AWS4-HMAC-SHA256 Credential=team-a/20260101/us-east-1/bedrock/` +
            `aws4_request, SignedHeaders=host, Signature=${"0".repeat(64)}`,
        }, ["content-length: 1000"]),
        '{"messages":',
      ],
    ];
    for (const [label, head, part] of cases) {
      const { status, json } = await stall(h, head, part);
      assert.equal(status, 408, `${label}: ${JSON.stringify(json)}`);
      const message = (json.error as { message?: string })?.message ?? json.message;
      assert.match(String(message), DEADLINE, label);
    }
    const res = await post(h.url + chat, openaiHeaders(), bodies.chat("chat-text"));
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
});

Deno.test("a body read in chunks is let go at the deadline: its stream is cancelled", async () => {
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode('{"model":'));
    },
    cancel() {
      cancelled = true;
    },
  });
  const req = new Request("http://x/v1/chat/completions", { method: "POST", body });
  const err = await readJsonBody(req, pairsOf(req.headers), 50).catch((e) => e);
  assert.ok(err instanceof GatewayError, String(err));
  assert.equal(err.status, 408);
  assert.match(err.message, /request_body_timeout_ms \(50 ms\)/);
  // The cancel runs as the 408 is made.
  await new Promise((r) => setTimeout(r, 0));
  assert.ok(cancelled, "the body was not cancelled");
});

Deno.test("a body that arrives in time is read whole, whatever its size or framing", async () => {
  const text = JSON.stringify({ model: "m", input: "x".repeat(3 * 1024 * 1024) });
  const chunks = [text.slice(0, 1000), text.slice(1000)];
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      const next = chunks.shift();
      if (next === undefined) return c.close();
      await new Promise((r) => setTimeout(r, 20));
      c.enqueue(new TextEncoder().encode(next));
    },
  });
  const req = new Request("http://x/", { method: "POST", body });
  const read = await readJsonBody(req, pairsOf(req.headers), 5000);
  assert.equal(read.raw, text);
});
