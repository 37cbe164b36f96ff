/**
 * The Responses WebSocket's provider socket is dialled like an HTTP call (src/request/relay.ts
 * openUpstreamSocket): within the provider's `connect_ms`, failing over when a dial fails, and
 * credentialed by the format plugin (the mock refuses a socket without the provider key).
 */
import assert from "node:assert/strict";
import { KEY, PROVIDER_KEY, routeFor, startHarness, wsExchange } from "./helpers.ts";

/** A provider socket that records the upgrade's headers and completes every response. */
function recordingProvider() {
  const seen: Headers[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    seen.push(new Headers(req.headers));
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onmessage = () => {
      const usage = { input_tokens: 1, output_tokens: 1, total_tokens: 2 };
      const done = { id: "resp_1", object: "response", status: "completed", output: [], usage };
      socket.send(JSON.stringify({ type: "response.completed", response: done }));
    };
    return response;
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, seen, close: () => server.shutdown() };
}

/** A TCP listener that accepts connections and never answers: a handshake that never ends. */
function silentListener() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) conns.push(conn);
  })();
  return {
    url: `http://127.0.0.1:${listener.addr.port}`,
    async close() {
      listener.close();
      await accepting.catch(() => {});
      for (const c of conns) c.close();
    },
  };
}

/** A loopback port nothing listens on. */
function closedPort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = l.addr;
  l.close();
  return port;
}

Deno.test("websocket upstream: connect deadline, failover on a failed dial", async (t) => {
  const silent = silentListener();
  const recording = recordingProvider();
  const refused = `http://127.0.0.1:${closedPort()}`;
  const h = await startHarness({
    tweak(config) {
      const base = config.providers.find((p) => p.name === "oai")!;
      config.providers.push(
        { ...base, name: "ws-silent", base_url: silent.url, timeouts: connect(300) },
        { ...base, name: "ws-silent-long", base_url: silent.url, timeouts: connect(10_000) },
        { ...base, name: "ws-refused", base_url: refused, timeouts: connect(300) },
        { ...base, name: "ws-recording", base_url: recording.url },
      );
      const passthrough = routeFor(config, "pt-*");
      config.routes.unshift(
        { ...passthrough, models: ["silent-*"], provider: "ws-silent" },
        { ...passthrough, models: ["long-*"], provider: "ws-silent-long" },
        {
          ...passthrough,
          models: ["fo-*"],
          provider: undefined,
          targets: [
            { provider: "ws-refused", weight: 1 },
            { provider: "oai", model: "pt-text", weight: 1 },
          ],
        },
        { ...passthrough, models: ["rec-*"], provider: "ws-recording" },
      );
    },
  });
  const create = (model: string) => ({ type: "response.create", model, input: "hi" });
  try {
    await t.step("a handshake that never ends: 504 after connect_ms", async () => {
      const [events] = await wsExchange(h.url, [create("silent-x")]);
      const error = events.at(-1)!;
      assert.equal(error.type, "error");
      assert.equal(error.status, 504);
      assert.match(
        (error.error as { message: string }).message,
        /upstream WebSocket did not open within 300 ms/,
      );
    });
    await t.step("a client that leaves during the dial is logged as gone (499)", async () => {
      const ws = new WebSocket(h.url.replace(/^http/, "ws") + "/v1/responses", {
        headers: { authorization: `Bearer ${KEY}` },
      });
      await new Promise((resolve) => ws.onopen = resolve);
      ws.send(JSON.stringify(create("long-x")));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const closed = new Promise((resolve) => ws.onclose = resolve);
      ws.close();
      await closed;
      let line: Record<string, unknown> | undefined;
      for (let i = 0; i < 50 && !line; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        line = h.logs.find((l) => l.model === "long-x");
      }
      assert.equal(line?.status, 499, JSON.stringify(line));
      assert.equal(line?.provider, "ws-silent-long");
    });
    await t.step("a refused dial fails over to the next target", async () => {
      const [events] = await wsExchange(h.url, [create("fo-x")]);
      assert.equal(events.at(-1)!.type, "response.completed", JSON.stringify(events.at(-1)));
    });
    await t.step("the plugin's credential goes up, the client's key does not", async () => {
      const [events] = await wsExchange(h.url, [create("rec-x")]);
      assert.equal(events.at(-1)!.type, "response.completed", JSON.stringify(events.at(-1)));
      const headers = recording.seen.at(-1)!;
      assert.equal(headers.get("authorization"), `Bearer ${PROVIDER_KEY}`);
      assert.ok(![...headers.values()].some((v) => v.includes(KEY)), "no client key upstream");
    });
  } finally {
    await h.close();
    await silent.close();
    await recording.close();
  }
});

const connect = (connect_ms: number) => ({ connect_ms, first_byte_ms: 300_000, idle_ms: 300_000 });
