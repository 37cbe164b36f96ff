/**
 * End to end behind a Kong-like TLS proxy (nginx configured like Kong's unbuffered route, see
 * tests/proxy/nginx.ts): the client speaks HTTPS/WSS to nginx, nginx speaks HTTP to the gateway
 * on loopback, the gateway talks to the mock upstream.
 *
 * 1. The harness itself, against a tiny echo backend: TLS with the test CA, Kong's forwarded
 *    headers and request id, an SSE stream that is not buffered, a WebSocket upgrade.
 * 2. The real gateway (main.ts) + mock upstream behind it.
 *
 * Needs nginx and openssl (.ci/install-proxy-tools.sh); ignored with a message otherwise.
 */
import assert from "node:assert/strict";
import {
  commandExists,
  freePort,
  nginxBinary,
  type RunningNginx,
  startNginx,
} from "./proxy/nginx.ts";
import type { WsClientEvent, WsClientJob } from "./proxy/ws_client.ts";

const ROOT = new URL("../", import.meta.url);
const MAIN_TS = new URL("main.ts", ROOT);
const MOCK_TS = new URL("tests/mock/upstream.ts", ROOT);
const WS_CLIENT_TS = new URL("tests/proxy/ws_client.ts", ROOT);

/** Gap between two events of the mock's `slow` scenario (tests/mock/scenario.ts SLOW_MS). */
const SLOW_MS = 300;
const CLIENT_KEY = "sk-test-proxy-0123456789";
const PROVIDER_KEY = "upstream-key-proxy";

async function fileExists(url: URL): Promise<boolean> {
  try {
    await Deno.stat(url);
    return true;
  } catch {
    return false;
  }
}

const haveTools = await nginxBinary() !== undefined &&
  await commandExists("openssl", ["version"]);
const haveGateway = await fileExists(MAIN_TS) && await fileExists(MOCK_TS);
const TOOLS_MISSING = "nginx/openssl not installed: run .ci/install-proxy-tools.sh";

// ---------------------------------------------------------------------------------------------
// helpers

/** Reads a streamed body, noting when the first non-empty chunk and the end arrived. */
async function timeStream(
  res: Response,
  start: number,
): Promise<{ text: string; firstMs: number; endMs: number }> {
  assert.ok(res.body, "response has a body");
  let text = "";
  let firstMs = -1;
  for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
    if (firstMs < 0 && chunk.trim().length > 0) firstMs = performance.now() - start;
    text += chunk;
  }
  return { text, firstMs, endMs: performance.now() - start };
}

/** Runs tests/proxy/ws_client.ts in a subprocess that trusts the test CA (`--cert`). */
async function runWsClient(caCertFile: string, job: WsClientJob): Promise<WsClientEvent[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-net=127.0.0.1",
      "--cert",
      caCertFile,
      WS_CLIENT_TS.pathname,
      JSON.stringify(job),
    ],
    cwd: ROOT.pathname,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const stdout = dec.decode(out.stdout);
  assert.ok(out.success, `ws client failed (${out.code}):\n${stdout}${dec.decode(out.stderr)}`);
  return stdout.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
}

function messages(events: WsClientEvent[]): Record<string, unknown>[] {
  return events.flatMap((e) => {
    if (e.event !== "message") return [];
    try {
      return [JSON.parse(e.data)];
    } catch {
      return [{ raw: e.data }];
    }
  });
}

// ---------------------------------------------------------------------------------------------
// 1. the harness against an echo backend

/** Echo backend: /headers returns what it received, /sse streams slowly, /ws echoes. */
function startEchoBackend(): { port: number; server: Deno.HttpServer } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/headers") {
      return Response.json(Object.fromEntries(req.headers));
    }
    if (url.pathname === "/sse") {
      let i = 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          const enc = new TextEncoder();
          const tick = () => {
            if (i === 5) {
              controller.enqueue(enc.encode("data: [DONE]\n\n"));
              controller.close();
              return;
            }
            controller.enqueue(enc.encode(`data: {"n":${i++}}\n\n`));
            timer = setTimeout(tick, SLOW_MS);
          };
          tick();
        },
        cancel() {
          clearTimeout(timer);
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    }
    if (url.pathname === "/ws") {
      // Read headers before upgrading: after the upgrade the request is closed.
      const hello = JSON.stringify({
        type: "hello",
        authorization: req.headers.get("authorization"),
        forwardedProto: req.headers.get("x-forwarded-proto"),
      });
      const { socket, response } = Deno.upgradeWebSocket(req);
      socket.onopen = () => socket.send(hello);
      socket.onmessage = (ev) => socket.send(JSON.stringify({ type: "echo", data: ev.data }));
      return response;
    }
    return new Response("not found", { status: 404 });
  });
  return { port: (server.addr as Deno.NetAddr).port, server };
}

Deno.test({
  name: haveTools
    ? "proxy harness: TLS, Kong headers, unbuffered SSE, WebSocket (echo backend)"
    : `proxy harness (IGNORED: ${TOOLS_MISSING})`,
  ignore: !haveTools,
  async fn(t) {
    const backend = startEchoBackend();
    let nginx: RunningNginx | undefined;
    let client: Deno.HttpClient | undefined;
    try {
      nginx = await startNginx({ upstreamPort: backend.port, clientTimeoutS: 1 });
      client = Deno.createHttpClient({ caCerts: [nginx.caPem] });
      const { url, port } = nginx;

      await t.step("a silent or slow client is closed by the proxy, not held open", async () => {
        for (const sends of ["", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"]) {
          const conn = await Deno.connectTls({ port, caCerts: [nginx!.caPem] });
          try {
            if (sends) await conn.write(new TextEncoder().encode(sends));
            const started = performance.now();
            const buf = new Uint8Array(1024);
            // nginx drops the connection (without a TLS close_notify) once client_header_timeout
            // runs out.
            try {
              while (await conn.read(buf) !== null) { /* drain */ }
            } catch (e) {
              assert.equal((e as Error).name, "UnexpectedEof", String(e));
            }
            const ms = performance.now() - started;
            assert.ok(ms < 5_000, `closed after ${ms} ms`);
          } finally {
            conn.close();
          }
        }
      });

      await t.step(
        "X-Forwarded-*, preserved Host and X-Kong-Request-Id reach the backend",
        async () => {
          const res = await fetch(`${url}/headers`, { client });
          assert.equal(res.status, 200);
          const seen: Record<string, string> = await res.json();
          assert.equal(seen["host"], `127.0.0.1:${port}`);
          assert.equal(seen["x-forwarded-for"], "127.0.0.1");
          assert.equal(seen["x-forwarded-proto"], "https");
          assert.equal(seen["x-forwarded-host"], "127.0.0.1");
          assert.equal(seen["x-forwarded-port"], String(port));
          assert.equal(seen["x-forwarded-path"], "/headers");
          assert.match(seen["x-kong-request-id"] ?? "", /^[0-9a-f]{32}$/);
          assert.equal(res.headers.get("x-kong-request-id"), seen["x-kong-request-id"]);

          const own = await fetch(`${url}/headers`, {
            client,
            headers: { "x-kong-request-id": "client-chosen-id" },
          });
          assert.equal((await own.json())["x-kong-request-id"], "client-chosen-id");
        },
      );

      await t.step("SSE is not buffered", async () => {
        const start = performance.now();
        const res = await fetch(`${url}/sse`, { client });
        const { text, firstMs, endMs } = await timeStream(res, start);
        assert.ok(text.endsWith("data: [DONE]\n\n"), text);
        // 5 gaps of SLOW_MS: buffered, everything would arrive at the end.
        assert.ok(firstMs >= 0 && firstMs < SLOW_MS, `first event after ${firstMs} ms`);
        assert.ok(endMs - firstMs >= 3 * SLOW_MS, `first ${firstMs} ms, end ${endMs} ms`);
      });

      await t.step("wss:// upgrade carries Authorization through", async () => {
        const events = await runWsClient(nginx!.caCertFile, {
          url: `wss://127.0.0.1:${port}/ws`,
          headers: { authorization: "Bearer sk-ws" },
          send: ["ping-1"],
          until: ["echo"],
        });
        const got = messages(events);
        assert.deepEqual(got[0], {
          type: "hello",
          authorization: "Bearer sk-ws",
          forwardedProto: "https",
        });
        assert.deepEqual(got[1], { type: "echo", data: "ping-1" });
        assert.ok(
          events.some((e) => e.event === "close" && e.code === 1000),
          JSON.stringify(events),
        );
      });
    } finally {
      client?.close();
      await nginx?.stop();
      await backend.server.shutdown();
    }
  },
});

// ---------------------------------------------------------------------------------------------
// 2. the gateway behind the proxy

interface Gateway {
  port: number;
  logs(): string;
  stop(): Promise<void>;
}

/** Starts main.ts as a subprocess with a config file; waits until /healthz answers 200. */
async function startGateway(dir: string, mockOrigin: string): Promise<Gateway> {
  const port = freePort();
  const configFile = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(
    configFile,
    [
      `listen: {hostname: 127.0.0.1, port: ${port}}`,
      `keys: [{name: team-a, key: ${CLIENT_KEY}}]`,
      `providers: [{name: up, api: responses, base_url: "${mockOrigin}/v1", api_key: ${PROVIDER_KEY}}]`,
      `routes: [{models: ["gpt-*"], provider: up, passthrough: true}]`,
      "shutdown_grace_s: 2",
      "",
    ].join("\n"),
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      MAIN_TS.pathname,
      "--config",
      configFile,
    ],
    cwd: ROOT.pathname,
    env: { PORT: String(port), HOST: "127.0.0.1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Drain both pipes (a full pipe would block the gateway); keep the text for messages.
  const chunks: string[] = [];
  const drain = (s: ReadableStream<Uint8Array>) =>
    s.pipeThrough(new TextDecoderStream()).pipeTo(
      new WritableStream({ write: (c) => void chunks.push(c) }),
    );
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const stop = async () => {
    if (!exited) {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
    }
    const timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
    }, 5000);
    await status;
    clearTimeout(timer);
    await drained;
  };
  const gateway = { port, logs: () => chunks.join(""), stop };

  const deadline = Date.now() + 30_000;
  while (true) {
    if (exited) {
      await stop();
      throw new Error(`gateway exited during startup:\n${gateway.logs()}`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      await res.body?.cancel();
      if (res.status === 200) return gateway;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`gateway did not answer /healthz within 30 s:\n${gateway.logs()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test({
  name: !haveTools
    ? `gateway behind TLS proxy (IGNORED: ${TOOLS_MISSING})`
    : !haveGateway
    ? "gateway behind TLS proxy (IGNORED: main.ts or tests/mock/upstream.ts not there yet)"
    : "gateway behind TLS proxy: request id, unbuffered SSE, wss:// Responses WebSocket",
  ignore: !haveTools || !haveGateway,
  async fn(t) {
    const { startMockUpstream } = await import(MOCK_TS.href);
    const mock = await startMockUpstream();
    const dir = await Deno.makeTempDir({ prefix: "llm-gateway-proxy-test-" });
    let gateway: Gateway | undefined;
    let nginx: RunningNginx | undefined;
    let client: Deno.HttpClient | undefined;
    try {
      gateway = await startGateway(dir, new URL(mock.url).origin);
      nginx = await startNginx({ upstreamPort: gateway.port });
      client = Deno.createHttpClient({ caCerts: [nginx.caPem] });
      const { url, port } = nginx;
      const auth = { authorization: `Bearer ${CLIENT_KEY}` };

      await t.step(
        "request id from X-Kong-Request-Id comes back as x-gateway-request-id",
        async () => {
          const res = await fetch(`${url}/v1/models`, { client, headers: auth });
          await res.body?.cancel();
          assert.equal(res.status, 200);
          const kongId = res.headers.get("x-kong-request-id");
          assert.match(kongId ?? "", /^[0-9a-f]{32}$/);
          assert.equal(res.headers.get("x-gateway-request-id"), kongId);
          // The gateway's own access log carries Kong's id and the X-Forwarded-For client.
          let line: Record<string, unknown> | undefined;
          for (let i = 0; i < 50 && !line; i++) {
            line = gateway!.logs().split("\n").filter((l) => l.startsWith("{"))
              .map((l) => JSON.parse(l)).find((l) => l.request_id === kongId);
            if (!line) await new Promise((r) => setTimeout(r, 20));
          }
          assert.equal(line?.client_ip, "127.0.0.1", "X-Forwarded-For reached the gateway");
          assert.equal(line?.endpoint, "models");

          const own = await fetch(`${url}/v1/models`, {
            client,
            headers: { ...auth, "x-kong-request-id": "req-from-client-42" },
          });
          await own.body?.cancel();
          assert.equal(own.headers.get("x-gateway-request-id"), "req-from-client-42");
        },
      );

      await t.step("health endpoints answer on the gateway directly", async () => {
        for (const path of ["/healthz", "/readyz"]) {
          const res = await fetch(`http://127.0.0.1:${gateway!.port}${path}`);
          await res.body?.cancel();
          assert.equal(res.status, 200, path);
        }
      });

      await t.step("SSE: the first event arrives long before the stream ends", async () => {
        const start = performance.now();
        const res = await fetch(`${url}/v1/responses`, {
          client,
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-slow", input: "hello", stream: true }),
        });
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
        const { text, firstMs, endMs } = await timeStream(res, start);
        assert.match(text, /response\.completed/);
        assert.ok(firstMs >= 0, "got an event");
        // The slow mock waits SLOW_MS between events; a buffering proxy delivers all at the end.
        assert.ok(
          endMs - firstMs >= 2 * SLOW_MS && firstMs < endMs / 2,
          `first event after ${firstMs.toFixed(0)} ms, end after ${endMs.toFixed(0)} ms`,
        );
        // The provider got the provider's key, never the client's.
        const upstream = mock.requests.findLast((r: { path: string }) =>
          r.path === "/v1/responses"
        );
        assert.ok(upstream, "the mock saw the request");
        assert.equal(upstream.headers["authorization"], `Bearer ${PROVIDER_KEY}`);
        assert.ok(!JSON.stringify(upstream.headers).includes(CLIENT_KEY));
      });

      await t.step(
        "wss:// Responses WebSocket: Authorization passes, response.completed",
        async () => {
          const events = await runWsClient(nginx!.caCertFile, {
            url: `wss://127.0.0.1:${port}/v1/responses`,
            headers: auth,
            send: [JSON.stringify({ type: "response.create", model: "gpt-text", input: "hi" })],
            until: ["response.completed", "response.failed", "error"],
          });
          const types = messages(events).map((m) => m.type);
          assert.ok(types.includes("response.completed"), JSON.stringify(events));
          assert.ok(
            events.some((e) => e.event === "close" && e.code === 1000),
            JSON.stringify(events),
          );
          // Passthrough opened the provider's WebSocket with the provider's key.
          const upgrade = mock.requests.findLast((r: { method: string; path: string }) =>
            r.method === "GET" && r.path === "/v1/responses"
          );
          assert.ok(upgrade, "the mock saw the WebSocket upgrade");
          assert.equal(upgrade.headers["authorization"], `Bearer ${PROVIDER_KEY}`);
          assert.ok(mock.wsFrames.some((f: string) => f.includes('"response.create"')));
        },
      );

      await t.step("wss:// with a wrong key is refused", async () => {
        const events = await runWsClient(nginx!.caCertFile, {
          url: `wss://127.0.0.1:${port}/v1/responses`,
          headers: { authorization: "Bearer sk-wrong" },
          send: [JSON.stringify({ type: "response.create", model: "gpt-text", input: "hi" })],
          until: ["response.completed", "response.failed", "error"],
          timeoutMs: 5000,
        });
        // Refused at the handshake (401), or at the latest with an error frame.
        const types = messages(events).map((m) => m.type);
        assert.ok(!types.includes("response.completed"), JSON.stringify(events));
        assert.ok(
          !events.some((e) => e.event === "open") || types[0] === "error",
          JSON.stringify(events),
        );
      });
    } catch (err) {
      if (gateway) console.error(`--- gateway output ---\n${gateway.logs()}`);
      if (nginx) console.error(`--- nginx error.log ---\n${await nginx.errorLog()}`);
      throw err;
    } finally {
      client?.close();
      await nginx?.stop();
      await gateway?.stop();
      await mock.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
