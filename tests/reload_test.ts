/**
 * Config reload against a real gateway process: SIGHUP (or, in dev mode, editing the file)
 * swaps keys, routes and provider keys for new requests while streams and sockets opened
 * before keep going; an invalid config changes nothing.
 */
import assert from "node:assert/strict";
import { configLoader } from "../src/reload.ts";
import { bodies, FORMATS, HASHED_KEY, KEY, openaiHeaders, post, type WsEvent } from "./helpers.ts";
import { type MockUpstream, startMockUpstream } from "./mock/upstream.ts";
import { spawnGateway, type WatchedGateway } from "./process.ts";

const NEW_KEY = "sk-test-key-added-by-reload";
const PROVIDER_A1 = "sk-provider-a-first";
const PROVIDER_A2 = "sk-provider-a-second";
const PROVIDER_B = "sk-provider-b-only";

interface Setup {
  dir: string;
  path: string;
  a: MockUpstream;
  b: MockUpstream;
  /** Writes the config (JSON is YAML) and the key files, as an operator would. */
  write(v: Version): Promise<void>;
  /** Starts the gateway on this config; `close` ends it if a failed test left it running. */
  spawn(...args: string[]): Promise<WatchedGateway>;
  close(): Promise<void>;
}

interface Version {
  /** Client keys in team-a's key file. */
  teamA: string[];
  /** Whether team-b (a plain `key`) is configured. */
  teamB: boolean;
  /** The key in provider a's key file. */
  providerKey: string;
  /** Where `chat-*` and the `pt-*` passthrough route go. */
  moved: "a" | "b";
  /** Replaces parts of the document (invalid fields, a new listen address). */
  tweak?: (doc: Record<string, unknown>) => void;
}

async function setup(): Promise<Setup> {
  const [a, b] = [await startMockUpstream(), await startMockUpstream()];
  const dir = await Deno.makeTempDir();
  const path = `${dir}/gateway.yaml`;
  let gw: WatchedGateway | undefined;
  let exited = false;
  return {
    dir,
    path,
    a,
    b,
    async write(v) {
      await Deno.writeTextFile(`${dir}/team-a.keys`, `# team a\n${v.teamA.join("\n")}\n`);
      await Deno.writeTextFile(`${dir}/provider-a.key`, `${v.providerKey}\n`);
      const doc: Record<string, unknown> = {
        listen: { hostname: "127.0.0.1", port: 0 },
        keys: [
          { name: "team-a", key_file: `${dir}/team-a.keys` },
          ...(v.teamB ? [{ name: "team-b", key: HASHED_KEY }] : []),
        ],
        providers: [
          {
            name: "a",
            api: "chat",
            base_url: `${a.url}/v1`,
            api_key_file: `${dir}/provider-a.key`,
          },
          { name: "a-resp", api: "responses", base_url: `${a.url}/v1`, api_key: PROVIDER_A1 },
          { name: "b", api: "chat", base_url: `${b.url}/v1`, api_key: PROVIDER_B },
          { name: "b-resp", api: "responses", base_url: `${b.url}/v1`, api_key: PROVIDER_B },
        ],
        routes: [
          { models: ["chat-*"], provider: v.moved },
          { models: ["pt-*"], provider: `${v.moved}-resp`, passthrough: true },
          { models: ["keep-*"], provider: "a" },
        ],
        shutdown_grace_s: 1,
      };
      v.tweak?.(doc);
      // Written whole at once, as a deploy tool would (an editor's partial write is another
      // reload when the save completes).
      await Deno.writeTextFile(`${path}.tmp`, JSON.stringify(doc));
      await Deno.rename(`${path}.tmp`, path);
    },
    async spawn(...args) {
      gw = await spawnGateway("main.ts", [...args, "--config", path], {});
      gw.output().then(() => exited = true);
      return gw;
    },
    async close() {
      if (gw && !exited) gw.process.kill("SIGKILL");
      await gw?.output();
      await a.close();
      await b.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const V1: Version = { teamA: [KEY], teamB: true, providerKey: PROVIDER_A1, moved: "a" };
const V2: Version = { teamA: [KEY, NEW_KEY], teamB: false, providerKey: PROVIDER_A2, moved: "b" };

const chatCalls = (m: MockUpstream, model?: string) =>
  m.requests.filter((r) =>
    r.path === "/v1/chat/completions" && (!model || (r.json as { model?: string })?.model === model)
  );

const isReload = (outcome: string) => (l: Record<string, unknown>) =>
  l.msg === "config_reload" && l.outcome === outcome;

/** A client WebSocket kept open across a reload; one response at a time. */
function openSocket(url: string, key: string) {
  const ws = new WebSocket(url.replace(/^http/, "ws") + "/v1/responses", {
    headers: { authorization: `Bearer ${key}` },
  });
  const opened = new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let current: WsEvent[] = [];
  let answered: ((events: WsEvent[]) => void) | undefined;
  ws.onmessage = (e) => {
    const event = JSON.parse(e.data);
    current.push(event);
    if (/^(response\.(completed|incomplete|failed)|error)$/.test(event.type)) {
      answered?.(current);
      current = [];
    }
  };
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason }))
  );
  return {
    /** Sends one `response.create` and resolves with its events, through the terminal one. */
    async exchange(model: string): Promise<WsEvent[]> {
      await opened;
      const { promise, resolve } = Promise.withResolvers<WsEvent[]>();
      answered = resolve;
      ws.send(JSON.stringify({ type: "response.create", model, input: "hi" }));
      // A socket closed before the answer gives its close as the last event.
      return await Promise.race([
        promise,
        closed.then((c) => [...current, { type: "closed", ...c }]),
      ]);
    },
    closed,
    async close() {
      if (ws.readyState === WebSocket.OPEN) ws.close();
      await closed;
    },
  };
}

/** Waits for what a process writes to its other pipe (stderr after a stdout line). */
async function until(ok: () => boolean, what: string) {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(ok(), what);
}

async function statusOf(url: string): Promise<number> {
  const res = await fetch(url);
  await res.body?.cancel();
  return res.status;
}

const lastType = (events: WsEvent[]) => events.at(-1)?.type;

/** Reads a stream's first chunk now and the rest later. */
async function startStream(res: Response) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = (await reader.read()).value ?? "";
  return async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += value;
    }
  };
}

async function stop(gw: WatchedGateway) {
  gw.process.kill("SIGTERM");
  const out = await gw.output();
  assert.equal(out.code, 0, out.stderr);
  return out;
}

Deno.test("reload: SIGHUP adds and removes keys and moves routes; what is open keeps going", async () => {
  const s = await setup();
  try {
    await s.write(V1);
    const gw = await s.spawn();
    // Open before the reload: a slow stream, a converted socket, a passthrough socket, and a
    // socket of the key the reload removes. Each has answered once.
    const slow = await startStream(
      await post(`${gw.url}/v1/chat/completions`, openaiHeaders(), bodies.chat("chat-slow", true)),
    );
    // Its provider's key is rotated while it runs; its error event quotes the old key.
    const echoing = await startStream(
      await post(
        `${gw.url}/v1/chat/completions`,
        openaiHeaders(),
        bodies.chat("keep-slow-errevent-echo", true),
      ),
    );
    const converted = openSocket(gw.url, KEY);
    const relayed = openSocket(gw.url, KEY);
    const revoked = openSocket(gw.url, HASHED_KEY);
    assert.equal(lastType(await converted.exchange("chat-text")), "response.completed");
    assert.equal(lastType(await relayed.exchange("pt-text")), "response.completed");
    assert.equal(lastType(await revoked.exchange("chat-text")), "response.completed");
    assert.equal(chatCalls(s.a).length, 4, "before: chat-* goes to a (keep-* too)");
    assert.equal(s.a.wsFrames.length, 1, "before: pt-* goes to a's socket");

    await s.write(V2);
    gw.process.kill("SIGHUP");
    const [reload] = await gw.lines(isReload("applied"));
    assert.equal(reload.trigger, "SIGHUP");
    assert.match(reload.digest as string, /^[0-9a-f]{16}$/);
    assert.notEqual(reload.digest, reload.previous_digest);
    assert.equal(reload.restart_required, undefined);

    assert.equal(await statusOf(`${gw.url}/readyz`), 200);
    const added = await post(
      `${gw.url}/v1/chat/completions`,
      openaiHeaders(NEW_KEY),
      bodies.chat("chat-text"),
    );
    assert.equal(added.status, 200, "a key added to the key file is accepted");
    await added.body?.cancel();
    assert.equal(chatCalls(s.b).length, 1, "the moved route: new requests go to b");
    assert.equal(chatCalls(s.b)[0].headers.authorization, `Bearer ${PROVIDER_B}`);
    const removed = await post(
      `${gw.url}/v1/chat/completions`,
      openaiHeaders(HASHED_KEY),
      bodies.chat("chat-text"),
    );
    assert.equal(removed.status, 401, "a removed key is refused");
    await removed.body?.cancel();
    const kept = await post(
      `${gw.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("keep-text"),
    );
    assert.equal(kept.status, 200);
    await kept.body?.cancel();
    assert.equal(
      chatCalls(s.a, "keep-text")[0].headers.authorization,
      `Bearer ${PROVIDER_A2}`,
      "the provider key file is read again",
    );

    const text = await slow();
    assert.match(text, /data: \[DONE\]\n\n$/, "the stream started before completes");
    assert.doesNotMatch(text, /error/);
    assert.equal(chatCalls(s.a, "chat-slow").length, 1);
    assert.equal(chatCalls(s.a, "chat-slow")[0].headers.authorization, `Bearer ${PROVIDER_A1}`);
    assert.equal(chatCalls(s.b, "chat-slow").length, 0, "…on the provider it started with");
    // Provider keys old and new are scrubbed from what upstreams echo.
    const echoed = await echoing();
    assert.match(echoed, /\[redacted\]/);
    assert.ok(!echoed.includes(PROVIDER_A1), "the replaced key, echoed by a stream begun before");
    const after = await post(
      `${gw.url}/v1/chat/completions`,
      openaiHeaders(),
      bodies.chat("keep-errevent-echo", true),
    );
    const afterText = await after.text();
    assert.match(afterText, /\[redacted\]/);
    assert.ok(!afterText.includes(PROVIDER_A2), "the new key, echoed after the reload");

    // A converted frame is a new request: it follows the moved route.
    assert.equal(lastType(await converted.exchange("chat-text")), "response.completed");
    assert.equal(chatCalls(s.b).length, 2, "the open converted socket's next frame goes to b");
    // A passthrough socket stays bound to the provider socket it opened.
    assert.equal(lastType(await relayed.exchange("pt-text")), "response.completed");
    assert.equal(s.a.wsFrames.length, 2, "the open passthrough socket still relays to a");
    assert.equal(s.b.wsFrames.length, 0);
    const fresh = openSocket(gw.url, KEY);
    assert.equal(lastType(await fresh.exchange("pt-text")), "response.completed");
    assert.equal(s.b.wsFrames.length, 1, "a new passthrough socket goes to b");
    // The revoked key's socket: its next frame is refused and the socket closed.
    const refused = await revoked.exchange("chat-text");
    assert.equal(lastType(refused), "error");
    assert.equal(refused.at(-1)!.status, 401);
    assert.deepEqual(await revoked.closed, { code: 1008, reason: "API key revoked" });
    await Promise.all([converted.close(), relayed.close(), fresh.close()]);

    const out = await stop(gw);
    const access = out.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.ok(
      access.some((l) => l.endpoint === "responses_ws" && l.status === 401 && l.key === "team-b"),
      "the refused frame is logged",
    );
    for (const secret of [KEY, NEW_KEY, HASHED_KEY, PROVIDER_A1, PROVIDER_A2, PROVIDER_B]) {
      assert.ok(!out.stdout.includes(secret) && !out.stderr.includes(secret), "no key in logs");
    }
  } finally {
    await s.close();
  }
});

Deno.test("reload: an invalid config changes nothing and names every bad field; dev mode watches the file", async () => {
  const s = await setup();
  try {
    await s.write(V1);
    const gw = await s.spawn("--dev");
    await s.write({
      ...V2,
      teamA: ["short"],
      tweak(doc) {
        const providers = doc.providers as Record<string, unknown>[];
        providers[0].api_key_file = `${s.dir}/missing.key`;
        (doc.routes as Record<string, unknown>[])[2].provider = "nowhere";
        doc.websocket = { idle_timeout_s: -1 };
      },
    });
    // No signal: dev mode reloads when the file changes.
    const [rejected] = await gw.lines(isReload("rejected"));
    assert.equal(rejected.trigger, "file changed");
    const errors = rejected.errors as string[];
    assert.deepEqual(errors.map((e) => e.split(":")[0]), [
      "keys[0].key_file",
      "providers[0].api_key_file",
      "websocket.idle_timeout_s",
      "routes[2].provider",
    ]);
    assert.match(errors[0], /key 1 is shorter than 8 characters/);
    assert.match(errors[1], /cannot read/);
    assert.match(errors[3], /unknown provider \(one of /);
    assert.ok(!errors[3].includes("nowhere"), "the value is not repeated");
    await until(() => errors.every((e) => gw.stderr().includes(e)), "stderr names every error");

    // The old config is in force: the old key, the old route, the removed key still there.
    for (const key of [KEY, HASHED_KEY]) {
      const res = await post(
        `${gw.url}/v1/chat/completions`,
        openaiHeaders(key),
        bodies.chat("chat-text"),
      );
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    assert.equal(chatCalls(s.a).length, 2);
    assert.equal(chatCalls(s.b).length, 0);
    assert.equal(await statusOf(`${gw.url}/readyz`), 200);

    // A new listen address needs a restart: reported, the rest applied.
    await s.write({
      ...V2,
      tweak: (doc) => doc.listen = { hostname: "127.0.0.2", port: 0 },
    });
    const [applied] = await gw.lines(isReload("applied"));
    assert.deepEqual(applied.restart_required, ["listen"]);
    await until(() => /reload applied except listen: restart to apply/.test(gw.stderr()), "stderr");
    const res = await post(
      `${gw.url}/v1/chat/completions`,
      openaiHeaders(NEW_KEY),
      bodies.chat("chat-text"),
    );
    assert.equal(res.status, 200, "still listening where it was, with the new keys");
    await res.body?.cancel();
    assert.equal(chatCalls(s.b).length, 1);
    await stop(gw);
  } finally {
    await s.close();
  }
});

Deno.test("reload: under load no request is lost or failed", async () => {
  const s = await setup();
  try {
    await s.write(V1);
    const gw = await s.spawn();
    let running = true;
    const failures: string[] = [];
    let completed = 0;
    // HTTP clients (streams and JSON) and a WebSocket client, all busy the whole time.
    const http = async (model: string, stream: boolean) => {
      while (running) {
        const res = await post(
          `${gw.url}/v1/chat/completions`,
          openaiHeaders(),
          bodies.chat(model, stream),
        );
        const text = await res.text();
        const ok = res.status === 200 &&
          (stream ? /data: \[DONE\]\n\n$/.test(text) && !/error/.test(text) : /"stop"/.test(text));
        if (ok) completed++;
        else failures.push(`${model} ${res.status}: ${text.slice(-200)}`);
      }
    };
    const socket = async () => {
      const ws = openSocket(gw.url, KEY);
      while (running) {
        const events = await ws.exchange("chat-text");
        if (lastType(events) === "response.completed") completed++;
        else failures.push(`ws: ${JSON.stringify(events.at(-1))}`);
        if (lastType(events) === "closed") break;
      }
      await ws.close();
    };
    const clients = [
      http("chat-text", false),
      http("chat-text", true),
      http("chat-slow", true),
      http("keep-text", true),
      socket(),
    ];
    const reloads = 6;
    for (let i = 1; i <= reloads; i++) {
      await new Promise((r) => setTimeout(r, 300));
      await s.write(i % 2 ? V2 : V1);
      gw.process.kill("SIGHUP");
      await gw.lines(isReload("applied"), i);
    }
    running = false;
    await Promise.all(clients);
    assert.deepEqual(failures, []);
    console.log(
      "COMPLETED",
      completed,
      chatCalls(s.a, "chat-slow").length + chatCalls(s.b, "chat-slow").length,
    );
    assert.ok(completed >= 20, `requests completed: ${completed}`);
    assert.ok(chatCalls(s.a).length > 0 && chatCalls(s.b).length > 0, "both configs served");
    await stop(gw);
  } finally {
    await s.close();
  }
});

Deno.test("reload: the built-in dev config keeps its generated key across re-reads", () => {
  const announced: string[] = [];
  const load = configLoader({
    formats: FORMATS,
    dev: true,
    env: () => undefined,
    onGeneratedKey: (key) => announced.push(key),
  });
  const first = load().keys[0];
  const second = load().keys[0];
  assert.equal(announced.length, 1, "announced once");
  assert.deepEqual(second, first);
  assert.deepEqual(first, { name: "key-1", key: announced[0] });
});
