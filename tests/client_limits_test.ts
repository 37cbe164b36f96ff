/**
 * No client can grow the gateway's memory without bound (issue 25, point 1): model names are
 * bounded everywhere they enter, upstream answers are read up to a configured size, converted
 * requests are bounded in depth, and WebSockets and streams hold bounded data per client.
 */
import assert from "node:assert/strict";
import { MAX_MODEL_CHARS } from "../src/kit/model_name.ts";
import { MAX_NESTING } from "../src/kit/nesting.ts";
import { breather } from "../src/kit/http.ts";
import type { Config } from "../src/config/config.ts";
import { Metrics } from "../src/ops/metrics.ts";
import {
  anthropicHeaders,
  bodies,
  googleHeaders,
  type Harness,
  KEY,
  openaiHeaders,
  post,
  routeFor,
  startHarness,
  wsExchange,
} from "./helpers.ts";

async function withHarness(
  run: (h: Harness) => Promise<void>,
  opts: Parameters<typeof startHarness>[0] = {},
) {
  const h = await startHarness(opts);
  try {
    await run(h);
  } finally {
    await h.close();
  }
}

/** The error message of a 4xx/5xx in any of the three dialects. */
function messageOf(body: Record<string, unknown>): string {
  return ((body.error as Record<string, unknown>).message as string);
}

// `demo-*` answers any name, as the rename route did: only the bound stops it.
const LONG = "demo-" + "x".repeat(MAX_MODEL_CHARS);

Deno.test("a model name over the bound is a 400 naming model on every endpoint", async () => {
  await withHarness(async (h) => {
    const cases: [string, string, Record<string, string>, unknown][] = [
      ["chat", "/v1/chat/completions", openaiHeaders(), bodies.chat(LONG)],
      ["responses", "/v1/responses", openaiHeaders(), bodies.responses(LONG)],
      ["compact", "/v1/responses/compact", openaiHeaders(), bodies.responses(LONG)],
      ["messages", "/v1/messages", anthropicHeaders(), bodies.messages(LONG)],
      ["count_tokens", "/v1/messages/count_tokens", anthropicHeaders(), bodies.messages(LONG)],
      ["gemini", `/v1beta/models/${LONG}:generateContent`, googleHeaders(), bodies.gemini()],
    ];
    for (const [label, path, headers, body] of cases) {
      const res = await post(h.url + path, headers, body);
      const json = await res.json();
      assert.equal(res.status, 400, `${label}: ${JSON.stringify(json)}`);
      assert.match(
        messageOf(json),
        /^model: \d+ characters is longer than the limit of 256/,
        label,
      );
      assert.ok(JSON.stringify(json).length < 1000, `${label}: the name is not echoed`);
      if (label === "messages" || label === "count_tokens") {
        assert.equal(json.type, "error", label);
      } else if (label === "gemini") assert.equal(json.error.status, "INVALID_ARGUMENT");
      else assert.equal(json.error.param, "model", label);
    }
    // A name at the bound still works.
    const ok = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat(LONG.slice(0, MAX_MODEL_CHARS)),
    );
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  });
});

Deno.test("a model name over the bound in a WebSocket frame is an error frame naming model", async () => {
  await withHarness(async (h) => {
    const [events] = await wsExchange(h.url, [{
      type: "response.create",
      model: LONG,
      input: "hi",
    }]);
    const error = events.at(-1)!;
    assert.equal(error.type, "error");
    assert.match(JSON.stringify(error), /model: \d+ characters is longer than the limit/);
  });
});

Deno.test("an unrouted name, a long path and a metric label are never echoed unbounded", async () => {
  await withHarness(async (h) => {
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat("nope"));
    assert.equal(res.status, 404);
    await res.body?.cancel();
    const path = `/v1beta/models/${"g".repeat(20_000)}:generateContent`;
    const long = await post(h.url + path, googleHeaders(), bodies.gemini());
    assert.equal(long.status, 400);
    await long.body?.cancel();
    const line = h.logs.find((l) => String(l.path).startsWith("/v1beta/models/ggg"))!;
    assert.ok(String(line.path).length <= 1025, `logged path of ${String(line.path).length}`);
    assert.ok(String(line.path).endsWith("…"));
  });
  // Defence in depth: a label value is clipped even if a long name got that far.
  const metrics = new Metrics();
  metrics.ended({
    endpoint: "chat",
    status: 200,
    model: "m".repeat(100_000),
    api: "chat",
    operation: "chat",
    attempts: 1,
    dialect: "openai",
  } as never);
  const text = metrics.expose();
  assert.ok(text.includes(`"${"m".repeat(MAX_MODEL_CHARS)}…"`));
  assert.ok(!text.includes("m".repeat(MAX_MODEL_CHARS + 1)));
});

Deno.test("a non-stream upstream body over max_body_mb is a 502 in the client's dialect", async () => {
  // The mock's `huge` reply is 1 MiB of text: over a 0.5 MiB cap, under the default.
  await withHarness(async (h) => {
    const relayed = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("chat-huge"),
    );
    const rj = await relayed.json();
    assert.equal(relayed.status, 502);
    assert.match(messageOf(rj), /a body over 0\.5 MiB \(max_body_mb\)/);
    const converted = await post(
      `${h.url}/v1/messages`,
      anthropicHeaders(),
      bodies.messages("chat-huge"),
    );
    const cj = await converted.json();
    assert.equal(converted.status, 502);
    assert.equal(cj.type, "error");
    assert.match(messageOf(cj), /max_body_mb/);
    const small = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("chat-text"),
    );
    assert.equal(small.status, 200);
    await small.body?.cancel();
  }, { tweak: (c) => c.providers.forEach((p) => p.max_body_mb = 0.5) });
  await withHarness(async (h) => {
    const res = await post(
      `${h.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("chat-huge"),
    );
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(h.gw.config.providers[0].max_body_mb, 32);
  });
});

/** `{a: {a: … "x"}}`, `levels` objects deep. */
function nested(levels: number): unknown {
  let v: unknown = "x";
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

Deno.test("a 10,000-deep input on a converted Responses request is a 400 naming the field", async () => {
  await withHarness(async (h) => {
    for (const model of ["chat-text", "msg-text", "demo-x"]) {
      const input = [{
        role: "user",
        content: [{ type: "input_text", text: "hi", x: nested(10_000) }],
      }];
      const res = await post(`${h.url}/v1/responses`, openaiHeaders(), { model, input });
      const json = await res.json();
      assert.equal(res.status, 400, `${model}: ${JSON.stringify(json).slice(0, 200)}`);
      assert.equal(json.error.type, "invalid_request_error");
      assert.match(json.error.param, /^input\[0\]\.content\[0\]\.x\.a\.a/);
      assert.match(messageOf(json), /nested more than 128 levels deep$/);
      const tools = [{ type: "function", name: "f", parameters: nested(10_000) }];
      const deepTool = await post(`${h.url}/v1/messages`, anthropicHeaders(), {
        ...bodies.messages(model),
        tools: [{ name: "f", input_schema: nested(10_000) }],
      });
      assert.equal(deepTool.status, model === "msg-text" ? 200 : 400, model); // msg-text relays
      await deepTool.body?.cancel();
      const viaTools = await post(`${h.url}/v1/responses`, openaiHeaders(), {
        model,
        input: "hi",
        tools,
      });
      assert.equal(viaTools.status, 400);
      assert.match((await viaTools.json()).error.param, /^tools\[0\]\.parameters\.a/);
    }
    // At the bound a body still converts.
    const fine = [{
      role: "user",
      content: [{ type: "input_text", text: "hi", x: nested(MAX_NESTING - 6) }],
    }];
    const ok = await post(`${h.url}/v1/responses`, openaiHeaders(), {
      model: "chat-text",
      input: fine,
    });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  });
});

Deno.test("a deep input over a converted Responses WebSocket is an error frame naming the field", async () => {
  await withHarness(async (h) => {
    const input = [{
      role: "user",
      content: [{ type: "input_text", text: "hi", x: nested(10_000) }],
    }];
    const [events] = await wsExchange(h.url, [{
      type: "response.create",
      model: "chat-text",
      input,
    }], {
      authorization: `Bearer ${KEY}`,
    });
    const error = events.at(-1)!;
    assert.equal(error.type, "error");
    assert.match(JSON.stringify(error), /nested more than 128 levels deep/);
  });
});

/**
 * A WebSocket client over a raw TCP connection, so that it can stop reading (a `WebSocket`
 * always reads): the handshake, then masked text frames (a zero mask leaves the text as is).
 */
async function rawSocket(url: string, path = "/v1/responses") {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const head = `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nUpgrade: websocket\r\n` +
    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
    `Sec-WebSocket-Version: 13\r\nAuthorization: Bearer ${KEY}\r\n\r\n`;
  await conn.write(new TextEncoder().encode(head));
  // The 101 response only (the gateway sends nothing else before a frame).
  const buf = new Uint8Array(4096);
  const n = await conn.read(buf);
  assert.match(new TextDecoder().decode(buf.subarray(0, n!)), /^HTTP\/1.1 101/);
  return {
    async send(text: string) {
      const payload = new TextEncoder().encode(text);
      const len = payload.length;
      const header = len < 126
        ? [0x81, 0x80 | len]
        : len < 65536
        ? [0x81, 0x80 | 126, len >> 8, len & 255]
        : [
          0x81,
          0x80 | 127,
          0,
          0,
          0,
          0,
          (len >>> 24) & 255,
          (len >> 16) & 255,
          (len >> 8) & 255,
          len & 255,
        ];
      const frame = new Uint8Array(header.length + 4 + len);
      frame.set(header);
      frame.set(payload, header.length + 4);
      for (let at = 0; at < frame.length;) at += await conn.write(frame.subarray(at));
    },
    /** Reads everything the gateway sent until it closed: bytes in all, and its close frame. */
    async drain(): Promise<{ bytes: number; close?: { code: number; reason: string } }> {
      let all = new Uint8Array(0);
      const chunk = new Uint8Array(1024 * 1024);
      for (;;) {
        const n = await conn.read(chunk);
        if (n === null) break;
        const next = new Uint8Array(all.length + n);
        next.set(all);
        next.set(chunk.subarray(0, n), all.length);
        all = next;
        const close = closeFrame(all);
        if (close) {
          conn.close();
          return { bytes: all.length, close };
        }
      }
      conn.close();
      return { bytes: all.length };
    },
    /** Reads at least `bytes` bytes of what the gateway sent. */
    async read(bytes: number): Promise<Uint8Array> {
      const out = new Uint8Array(bytes);
      for (let at = 0; at < bytes;) {
        const n = await conn.read(out.subarray(at));
        if (n === null) return out.subarray(0, at);
        at += n;
      }
      return out;
    },
    close: () => conn.close(),
  };
}

/** The close frame at the end of a server's frames, if they end with one. */
function closeFrame(bytes: Uint8Array): { code: number; reason: string } | undefined {
  let at = 0;
  while (at + 2 <= bytes.length) {
    const op = bytes[at] & 15;
    let len = bytes[at + 1] & 127;
    let start = at + 2;
    if (len === 126) {
      len = (bytes[at + 2] << 8) | bytes[at + 3];
      start = at + 4;
    } else if (len === 127) {
      len = Number(new DataView(bytes.buffer, at + 2, 8).getBigUint64(0));
      start = at + 10;
    }
    if (start + len > bytes.length) return undefined;
    if (op === 8) {
      const payload = bytes.subarray(start, start + len);
      return {
        code: (payload[0] << 8) | payload[1],
        reason: new TextDecoder().decode(payload.subarray(2)),
      };
    }
    at = start + len;
  }
}

const create = (model: string, input: string) =>
  JSON.stringify({ type: "response.create", model, input });

Deno.test("a Responses WebSocket that floods frames is closed with 1008 past the bounds", async () => {
  await withHarness(async (h) => {
    // The first response stalls (the mock goes quiet after its first events): the rest wait.
    // Past 8 frames waiting (the running one included), or past 32 MiB of them, the socket
    // closes; exactly that many are sent, so the close frame is read before anything else.
    for (const [count, size] of [[9, 1024], [4, 12 * 1024 * 1024]]) {
      const ws = await rawSocket(h.url);
      await ws.send(create("chat-stall", "hi"));
      const filler = "x".repeat(size);
      for (let i = 1; i < count; i++) await ws.send(create("chat-text", filler));
      const { close } = await ws.drain();
      assert.equal(close?.code, 1008, `${count} × ${size}`);
      assert.equal(close?.reason, "too many messages waiting");
    }
  });
});

Deno.test("a passthrough WebSocket whose client does not read is closed once 16 MiB wait", async () => {
  await withHarness(async (h) => {
    const ws = await rawSocket(h.url);
    // Each `huge` response is over 2 MiB of frames from the provider's socket.
    for (let i = 0; i < 7; i++) await ws.send(create("pt-huge", "hi"));
    // Let the provider answer them all while the client reads nothing.
    await new Promise((r) => setTimeout(r, 2000));
    const { bytes, close } = await ws.drain();
    assert.equal(close?.code, 1008);
    assert.match(close!.reason, /^the client is not reading: over \d+ bytes unsent$/);
    // Bounded: what reached the client is the backlog bound plus at most a frame or two.
    assert.ok(bytes < 16 * 1024 * 1024 + 4 * 1024 * 1024, `${bytes} bytes`);
  });
});

/**
 * A chat-completions provider whose stream never ends: it makes each event when the gateway
 * pulls one, and counts the bytes each stream was pulled.
 */
function endlessProvider() {
  const pulled: number[] = [];
  let cancelled = 0;
  const chunk = (delta: Record<string, unknown>) =>
    new TextEncoder().encode(`data: ${
      JSON.stringify({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0, delta, finish_reason: null }],
      })
    }\n\n`);
  const opening = chunk({ role: "assistant", content: "" });
  const text = chunk({ content: "x".repeat(16 * 1024) });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.text();
    const i = pulled.push(0) - 1;
    let next = opening;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled[i] += next.length;
        c.enqueue(next);
        next = text;
      },
      cancel: () => void cancelled++,
    }, { highWaterMark: 0 });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    pulled,
    cancelled: () => cancelled,
    close: () => server.shutdown(),
  };
}

/** Routes `endless-*` to the endless provider (a chat provider, like the mock's `oai-chat`). */
const endlessRoute = (url: string) => (c: Config) => {
  const chat = c.providers.find((p) => p.name === "oai-chat")!;
  c.providers.push({ ...chat, name: "endless", base_url: `${url}/v1` });
  c.routes.unshift({
    ...routeFor(c, "chat-*"),
    models: ["endless-*"],
    provider: undefined,
    targets: [{ provider: "endless", weight: 1 }],
  });
};

/** What each stream was pulled once no more is pulled (checked every 500 ms, each < 32 MiB). */
async function settled(pulled: number[]): Promise<number[]> {
  let last = -1;
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    for (const bytes of pulled) assert.ok(bytes < 32 * 1024 * 1024, `${bytes} pulled`);
    const now = pulled.reduce((a, b) => a + b, 0);
    if (now === last) return [...pulled];
    last = now;
  }
}

Deno.test("streams stop pulling from the provider while their client does not read", async () => {
  const provider = endlessProvider();
  const streams = 4;
  await withHarness(async (h) => {
    const { hostname, port } = new URL(h.url);
    const conns: Deno.Conn[] = [];
    const requests = [
      ["/v1/chat/completions", `authorization: Bearer ${KEY}`, bodies.chat("endless-x", true)],
      [
        "/v1/messages",
        `x-api-key: ${KEY}\r\nanthropic-version: 2023-06-01`,
        bodies.messages("endless-x", true),
      ],
      ["/v1/responses", `authorization: Bearer ${KEY}`, bodies.responses("endless-x", true)],
    ] as const;
    // Relayed (chat), and converted to Anthropic and Responses: each client sends its request
    // and never reads a byte.
    for (const [path, auth, body] of requests) {
      for (let i = 0; i < streams; i++) {
        const text = JSON.stringify(body);
        const conn = await Deno.connect({ hostname, port: Number(port) });
        await conn.write(new TextEncoder().encode(
          `POST ${path} HTTP/1.1\r\nhost: x\r\n${auth}\r\ncontent-type: application/json\r\n` +
            `content-length: ${text.length}\r\n\r\n${text}`,
        ));
        conns.push(conn);
      }
    }
    const pulled = await settled(provider.pulled);
    assert.equal(pulled.length, requests.length * streams);
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(provider.pulled, pulled, "pulled more while nobody read");
    for (const conn of conns) conn.close();
  }, { tweak: endlessRoute(provider.url) });
  await provider.close();
});

Deno.test("concurrent large bodies take turns: other work runs between any two of their steps", async () => {
  const log: string[] = [];
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) { /* a synchronous step, as a large parse or conversion */ }
  };
  const ticker = setInterval(() => log.push("tick"), 1);
  // Three large requests, each three synchronous steps with a breather before each.
  await Promise.all(["a", "b", "c"].map(async (name) => {
    for (let i = 0; i < 3; i++) {
      await breather();
      log.push(name);
      busy(5);
    }
  }));
  clearInterval(ticker);
  const steps = log.filter((e) => e !== "tick");
  assert.equal(steps.length, 9);
  // No two steps back to back: the event loop (here a timer) got a turn between them.
  const backToBack = log.findIndex((e, i) =>
    e !== "tick" && log[i + 1] !== undefined && log[i + 1] !== "tick"
  );
  assert.equal(backToBack, -1, log.join(" "));
});

Deno.test("a converted WebSocket response stops pulling its provider while the client does not read", async () => {
  const provider = endlessProvider();
  await withHarness(async (h) => {
    const ws = await rawSocket(h.url);
    await ws.send(create("endless-x", "hi"));
    const [pulled] = await settled(provider.pulled);
    // Paused under the backlog bound (1 MiB unsent, plus the sockets' buffers), not closed at
    // the 16 MiB one: reading resumes the response.
    assert.ok(pulled < 16 * 1024 * 1024, `${pulled} bytes pulled`);
    const more = await ws.read(4 * 1024 * 1024);
    assert.equal(closeFrame(more), undefined);
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(provider.pulled[0] > pulled, "reading did not resume the response");
    ws.close();
    // The client left: the provider's stream is cancelled (and the socket's timers end).
    for (let i = 0; i < 100 && provider.cancelled() === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(provider.cancelled(), 1);
  }, { tweak: endlessRoute(provider.url) });
  await provider.close();
});

Deno.test("a client that leaves mid-body is logged as its own cut (499), not a gateway failure", async () => {
  await withHarness(async (h) => {
    const { port } = new URL(h.url);
    for (const framing of ["content-length: 100000", "transfer-encoding: chunked"]) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
      const head =
        `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\n` +
        `content-type: application/json\r\n${framing}\r\n\r\n`;
      const part = framing.startsWith("content")
        ? '{"model":"chat-text",'
        : '15\r\n{"model":"chat-text",\r\n';
      await conn.write(new TextEncoder().encode(head + part));
      await new Promise((r) => setTimeout(r, 100));
      conn.close();
      for (let i = 0; i < 100 && h.logs.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const line = h.logs.shift();
      assert.ok(line, framing);
      assert.equal(line.status, 499, JSON.stringify(line));
      assert.doesNotMatch(String(line.error ?? ""), /internal gateway error/);
    }
  });
});
