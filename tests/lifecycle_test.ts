/** The gateway as a process: startup, graceful shutdown, and the bundled single file. */
import assert from "node:assert/strict";
import { setAccessLogSink } from "../src/ops/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import {
  anthropicHeaders,
  bodies,
  FORMATS,
  KEY,
  mockConfig,
  openaiHeaders,
  post,
} from "./helpers.ts";
import { decodeFrames } from "./mock/eventstream.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { spawnGateway } from "./process.ts";
import { bedrockHeaders, bedrockModelPath } from "./requests.ts";

async function writeConfig(upstreamUrl: string, grace: number): Promise<string> {
  const cfg = await mockConfig(upstreamUrl);
  const path = await Deno.makeTempFile({ suffix: ".yaml" });
  // JSON is valid YAML.
  await Deno.writeTextFile(path, JSON.stringify({ ...cfg, shutdown_grace_s: grace }));
  return path;
}

Deno.test("shutdown: SIGTERM drains in-flight streams, refuses new connections, exits 0", async () => {
  const upstream = await startMockUpstream();
  const config = await writeConfig(upstream.url, 20);
  try {
    const gw = await spawnGateway("main.ts", ["--config", config], {});
    const res = await post(
      `${gw.url}/v1/messages`,
      anthropicHeaders(),
      bodies.messages("msg-slow", true),
    );
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = (await reader.read()).value ?? "";
    gw.process.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    await assert.rejects(fetch(`${gw.url}/healthz`), "new connections are refused");
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += value;
    }
    assert.match(text, /event: message_stop/, "the in-flight stream finished normally");
    assert.doesNotMatch(text, /upstream_interrupted/);
    const out = await gw.output();
    assert.equal(out.code, 0);
    assert.match(out.stderr, /SIGTERM, draining/);
    const access = out.stdout.trim().split("\n").map((l) => JSON.parse(l));
    const line = access.find((l) => l.endpoint === "messages");
    assert.equal(line.status, 200);
    assert.equal(line.key, "team-a");
    assert.equal(line.model, "msg-slow");
    assert.equal(line.provider, "anthropic");
    assert.equal(typeof line.duration_ms, "number");
    assert.equal(typeof line.ttfb_ms, "number");
  } finally {
    await upstream.close();
    await Deno.remove(config);
  }
});

/** Reads a response body to its end as text. */
const readAll = (res: Response) => res.text();

/** Opens a WebSocket, sends one frame, and resolves with its frames and close code. */
function wsUntilClose(url: string, frame: unknown) {
  const ws = new WebSocket(url.replace(/^http/, "ws") + "/v1/responses", {
    headers: { authorization: `Bearer ${KEY}` },
  });
  const frames: Record<string, unknown>[] = [];
  const first = Promise.withResolvers<void>();
  ws.onopen = () => ws.send(JSON.stringify(frame));
  ws.onmessage = (e) => {
    frames.push(JSON.parse(e.data));
    first.resolve();
  };
  const closed = new Promise<{ code: number; reason: string; frames: typeof frames }>((resolve) =>
    ws.onclose = (e) => resolve({ code: e.code, reason: e.reason, frames })
  );
  return { first: first.promise, closed };
}

Deno.test("shutdown: streams longer than shutdown_grace_s end with the interruption", async () => {
  const upstream = await startMockUpstream();
  const config = await writeConfig(upstream.url, 1);
  try {
    // This time the config comes from GATEWAY_CONFIG.
    const gw = await spawnGateway("main.ts", [], { GATEWAY_CONFIG: config });
    const streams = await Promise.all([
      post(`${gw.url}/v1/messages`, anthropicHeaders(), bodies.messages("msg-stall", true)),
      post(`${gw.url}/v1/chat/completions`, openaiHeaders(), bodies.chat("msg-stall", true)),
      post(
        `${gw.url}/v1beta/models/gem-stall:streamGenerateContent`,
        { ...anthropicHeaders(), "x-goog-api-key": KEY },
        bodies.gemini(),
      ),
    ]);
    // A passthrough socket (relayed frames) and a converted one (frames built here).
    const sockets = ["pt-stall", "msg-stall"].map((model) =>
      wsUntilClose(gw.url, { type: "response.create", model, input: "hi" })
    );
    await Promise.all(sockets.map((s) => s.first));
    const started = performance.now();
    gw.process.kill("SIGINT");
    const [relayed, converted, array] = await Promise.all(streams.map(readAll));
    for (const [label, text] of [["relayed", relayed], ["converted", converted]]) {
      assert.match(text, /upstream_interrupted.*the gateway is shutting down/, label);
      assert.match(text, /data: \[DONE\]\n\n$/, `${label}: ends with [DONE]`);
    }
    const elements = JSON.parse(array);
    assert.equal(elements.at(-1).error.type, "upstream_interrupted", "the array stays parseable");
    for (const ws of await Promise.all(sockets.map((s) => s.closed))) {
      assert.equal(ws.code, 1001, "WebSocket closed as going away");
      assert.match(ws.reason, /shutting down/);
      const last = JSON.stringify(ws.frames.at(-1));
      assert.match(last, /"type":"upstream_interrupted"/, last);
      assert.match(last, /shutting down/, last);
    }
    const out = await gw.output();
    assert.equal(out.code, 0);
    assert.ok(performance.now() - started < 5_000, "exited after the grace period");
  } finally {
    await upstream.close();
    await Deno.remove(config);
  }
});

Deno.test("shutdown: while draining, /readyz is 503 and new requests get 503", async () => {
  const gw = await createGateway(await mockConfig("http://127.0.0.1:9"), FORMATS);
  const handler = createHandler(gw);
  const previous = setAccessLogSink(() => {});
  const ready = await handler(new Request("http://x/readyz"));
  assert.equal(ready.status, 200);
  await ready.body?.cancel();
  gw.draining = true;
  const unready = await handler(new Request("http://x/readyz"));
  assert.equal(unready.status, 503);
  await unready.body?.cancel();
  const res = await handler(
    new Request("http://x/v1/chat/completions", {
      method: "POST",
      headers: openaiHeaders(),
      body: JSON.stringify(bodies.chat("demo-x")),
    }),
  );
  assert.equal(res.status, 503);
  assert.match((await res.json()).error.message, /shutting down/);
  setAccessLogSink(previous);
});

Deno.test("bundle: `deno bundle` output starts and serves the demo provider, also to a ConverseStream client", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const bundle = await new Deno.Command(Deno.execPath(), {
      args: ["bundle", "--platform=deno", "-o", `${dir}/gateway.js`, "main.ts"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(bundle.code, 0, new TextDecoder().decode(bundle.stderr));
    const gw = await spawnGateway(`${dir}/gateway.js`, [], { GATEWAY_API_KEYS: KEY });
    assert.deepEqual(await (await fetch(`${gw.url}/healthz`)).json(), { status: "ok" });
    const res = await post(`${gw.url}/v1/chat/completions`, openaiHeaders(), {
      model: "demo-1",
      messages: [{ role: "user", content: "bundled" }],
    });
    assert.equal(res.status, 200);
    assert.match(
      (await res.json()).choices[0].message.content,
      /demo provider\. You said: bundled/,
    );
    // A module loaded on first use is in the bundle too (tests/first_use_test.ts).
    const stream = await post(
      gw.url + bedrockModelPath("demo-1", "converse-stream"),
      bedrockHeaders(),
      bodies.converse(),
    );
    assert.equal(stream.status, 200);
    const frames = decodeFrames(new Uint8Array(await stream.arrayBuffer()));
    assert.equal(frames.at(-1)?.headers[":event-type"], "metadata");
    gw.process.kill("SIGTERM");
    assert.equal((await gw.output()).code, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("compile: a runtime that cannot be downloaded is one line pointing at `deno task bundle`", async () => {
  const { tasks } = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  const [, script, args] = tasks.compile.match(/^deno run (?:--\S+ )*(scripts\/compile\.ts) (.*)$/);
  // Nothing listens there: every download fails, as offline (the runtime of another target is
  // never in the cache, so Deno has to download it).
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const proxy = `http://127.0.0.1:${closed.addr.port}`;
  closed.close();
  const other = Deno.build.os === "darwin" ? "x86_64-unknown-linux-gnu" : "aarch64-apple-darwin";
  const dir = await Deno.makeTempDir();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-run",
        "--allow-read",
        script,
        ...args.replace("dist/gateway", `${dir}/gateway`).split(" ").slice(0, -1),
        "--target",
        other,
        "main.ts",
      ],
      env: { HTTPS_PROXY: proxy, HTTP_PROXY: proxy, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const said = new TextDecoder().decode(out.stderr).trim();
    assert.notEqual(out.code, 0, said);
    assert.deepEqual(said.split("\n").length, 1, said);
    assert.match(said, /could not download the Deno runtime .*`deno task bundle` writes/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
