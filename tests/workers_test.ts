/**
 * `workers: 2`: main.ts as a real process whose two gateway threads share one port, behaving as
 * one gateway without Redis — a requests_per_minute limit exact across them, a tokens_per_minute
 * one counted exactly and passed by less than one answer, Responses and Interactions chains
 * continued on the other thread (HTTP and WebSocket), a relayed long decode's continuation
 * reaching the pool key that issued its token from either thread, one `/metrics` that is the
 * exact sum, one reload (SIGHUP) reaching both and a rejected one leaving both as they were,
 * SIGTERM draining both; a thread that dies is replaced within seconds, logged; and a key without
 * limits costs the supervisor no call.
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { Workers } from "../src/workers.ts";
import {
  anthropicHeaders,
  HASHED_KEY,
  KEY,
  mockConfig,
  openaiHeaders,
  routeFor,
  send,
  wsExchange,
} from "./helpers.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { spawnGateway, type WatchedGateway } from "./process.ts";
import { spendByWaves } from "./token_waves.ts";

/** A key limited to LIMIT requests a minute. */
const LIMITED_KEY = "gw-limited-key-0001";
const LIMIT = 7;
const CLIENTS = 64;
/** A key limited to TPM tokens a minute; U: the tokens of one mock chat answer (11 in, 7 out). */
const TPM_KEY = "gw-tpm-limited-0001";
const TPM = 100;
const U = 18;

/** The thread that answered each request (its access line's `worker`). */
async function workersOf(gw: WatchedGateway, requestIds: string[]): Promise<number[]> {
  const ids = new Set(requestIds);
  const lines = await gw.lines(
    (l) => l.msg === "access" && ids.has(String(l.request_id)),
    ids.size,
  );
  const by = new Map(lines.map((l) => [l.request_id, l.worker as number]));
  return requestIds.map((id) => by.get(id)!);
}

/**
 * Turns of one chain, each on a new connection, until a turn continues what the other thread
 * stored (at most 40 turns: each lands on either thread, so that is near certain).
 */
async function chainAcross(
  gw: WatchedGateway,
  turn: (
    previous?: string,
  ) => Promise<{ status: number; json: Record<string, unknown>; requestId: string }>,
) {
  let previous: { id: string; worker: number } | undefined;
  for (let i = 0; i < 40; i++) {
    const res = await turn(previous?.id);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    const [worker] = await workersOf(gw, [res.requestId]);
    if (previous && previous.worker !== worker) return i + 1;
    previous = { id: String(res.json.id), worker };
  }
  throw new Error(`40 turns never crossed threads; the gateway said:\n${gw.stderr()}`);
}

async function metricsText(gw: WatchedGateway): Promise<string> {
  const port = gw.stderr().match(/metrics on http:\/\/[\d.]+:(\d+)/)![1];
  return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** The sum of a counter's series (optionally those whose labels match). */
function total(text: string, name: string, labels = ""): number {
  return text.split("\n").filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

/** Two keys of one Gemini provider: a continuation is good only on the key that issued it. */
const POOL = ["gk-pool-key-zero", "gk-pool-key-one"];

async function workersConfig(upstream: string): Promise<Config> {
  const config = await mockConfig(upstream);
  config.workers = 2;
  config.keys.push(
    { name: "limited", key: LIMITED_KEY, limits: { requests_per_minute: LIMIT } },
    { name: "tpm", key: TPM_KEY, limits: { tokens_per_minute: TPM } },
  );
  const gemini = config.providers.find((p) => p.name === "gemini")!;
  config.providers.push({ ...gemini, name: "gemini-pool", api_key: undefined, api_keys: POOL });
  config.routes.unshift({
    ...routeFor(config, "gem-*"),
    models: ["pool-*"],
    provider: "gemini-pool",
  });
  return config;
}

Deno.test("workers: 2 threads on one port behave as one gateway", async (t) => {
  const upstream = await startMockUpstream();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  const config = await workersConfig(upstream.url);
  await Deno.writeTextFile(file, JSON.stringify(config));
  const gw = await spawnGateway(new URL("../main.ts", import.meta.url).pathname, [
    "--config",
    file,
  ], {});
  let exited = false;
  try {
    assert.match(gw.stderr(), /listening on http:\/\/[\d.]+:\d+ \(2 workers\)/);
    await t.step(
      `${CLIENTS} clients at once, a limit of ${LIMIT}: exactly ${LIMIT} pass`,
      async () => {
        const posts = () => upstream.requests.filter((r) => r.method === "POST").length;
        const before = posts();
        const answers = await Promise.all(
          Array.from(
            { length: CLIENTS },
            () =>
              send(`${gw.url}/v1/chat/completions`, openaiHeaders(LIMITED_KEY), {
                model: "chat-text",
                messages: [{ role: "user", content: "hi" }],
              }),
          ),
        );
        const statuses = answers.map((a) => a.status);
        assert.equal(statuses.filter((s) => s === 200).length, LIMIT, String(statuses));
        assert.equal(statuses.filter((s) => s === 429).length, CLIENTS - LIMIT);
        assert.equal(posts() - before, LIMIT, "the provider saw only those");
        const workers = new Set(await workersOf(gw, answers.map((a) => a.requestId)));
        assert.deepEqual([...workers].sort(), [0, 1], "both threads answered");
      },
    );

    await t.step(
      "tokens_per_minute across the threads: exactly u × admitted, past the limit by less than u",
      () =>
        spendByWaves({
          request: () =>
            send(`${gw.url}/v1/chat/completions`, openaiHeaders(TPM_KEY), {
              model: "chat-text",
              messages: [{ role: "user", content: "hi" }],
            }),
          clients: CLIENTS,
          used: async () => {
            const usage = await send(`${gw.url}/v1/gateway/usage`, openaiHeaders(TPM_KEY));
            return (usage.json.windows as Record<string, { used: number }>).tokens_per_minute.used;
          },
          limit: TPM,
          answer: U,
        }),
    );

    await t.step(
      "a Responses chain continues on the other thread (HTTP, then WebSocket)",
      async () => {
        const turns = await chainAcross(
          gw,
          (previous) =>
            send(`${gw.url}/v1/responses`, openaiHeaders(), {
              model: "msg-text",
              input: previous ? "and again" : "The password is swordfish.",
              ...previous && { previous_response_id: previous },
            }),
        );
        assert.ok(turns >= 2);
        const first = await send(`${gw.url}/v1/responses`, openaiHeaders(), {
          model: "msg-text",
          input: "The colour is teal.",
        });
        const done = await wsExchange(gw.url, [
          {
            type: "response.create",
            model: "msg-text",
            input: "x",
            previous_response_id: first.json.id,
          },
        ]);
        assert.equal(done[0].at(-1)!.type, "response.completed", JSON.stringify(done));
        assert.match(upstream.requests.at(-1)!.body, /teal/);
      },
    );

    await t.step("an Interactions chain continues on the other thread", async () => {
      await chainAcross(
        gw,
        (previous) =>
          send(`${gw.url}/v1beta/interactions`, { "x-goog-api-key": KEY }, {
            model: "gem-text",
            input: previous ? "and again" : "The password is swordfish.",
            ...previous && { previous_interaction_id: previous },
          }),
      );
      assert.match(upstream.requests.at(-1)!.body, /swordfish/);
    });

    await t.step(
      "a relayed long decode's continuation keeps its account on the other thread",
      async () => {
        const path = "/v1beta/models/pool-long3:streamGenerateContent?alt=sse";
        const body = {
          contents: [{ role: "user", parts: [{ text: "hi" }] }],
          generationConfig: { maxOutputTokens: 200_000 },
        };
        const hop = (token?: string) =>
          send(`${gw.url}${path}`, { "x-goog-api-key": KEY }, {
            ...body,
            ...token && { continuationToken: token },
          });
        const keyOf = (token?: string) =>
          upstream.requests.findLast((r) =>
            /:streamGenerateContent/.test(r.path) && r.json?.continuationToken === token
          )?.headers["x-goog-api-key"];
        // Each time the continuation lands on the other thread, it must still reach the first
        // hop's key (the mock refuses it on the other one). Three such times: without the pins
        // shared, each would find a pin-less thread that sends it on either key.
        let crossed = 0;
        for (let i = 0; i < 40 && crossed < 3; i++) {
          const first = await hop();
          assert.equal(first.status, 200, JSON.stringify(first.json));
          const token = String(first.json.text).match(/"continuationToken":\s*"([^"]+)"/)?.[1];
          assert.ok(token, String(first.json.text));
          const next = await hop(token);
          assert.equal(next.status, 200, JSON.stringify(next.json));
          assert.equal(keyOf(token), keyOf(undefined), "the continuation reached the issuing key");
          const [a, b] = await workersOf(gw, [first.requestId, next.requestId]);
          if (a !== b) crossed++;
        }
        assert.equal(crossed, 3, "continuations crossed threads");
      },
    );

    await t.step("one /metrics: the exact sum over the threads", async () => {
      const answered = (await gw.lines((l) => l.msg === "access", 1)).length;
      const text = await metricsText(gw);
      assert.equal(total(text, "gateway_requests_total"), answered);
      assert.equal(total(text, "gateway_identity_requests_total", 'key="limited"'), CLIENTS);
      assert.equal(
        total(text, "gateway_limit_rejections_total", 'key="limited"'),
        CLIENTS - LIMIT,
      );
    });

    await t.step(
      "SIGHUP reloads both threads; a rejected reload leaves both as they were",
      async () => {
        const next = structuredClone(config);
        next.keys.push({ name: "late", key: "gw-late-key-000001" });
        await Deno.writeTextFile(file, JSON.stringify(next));
        Deno.kill(gw.process.pid, "SIGHUP");
        await gw.lines((l) => l.msg === "config_reload" && l.outcome === "applied");
        const late = () =>
          Promise.all(
            Array.from({ length: 16 }, () =>
              send(`${gw.url}/v1/models`, openaiHeaders("gw-late-key-000001"))),
          );
        let answers = await late();
        assert.deepEqual(
          answers.map((a) => a.status),
          Array(16).fill(200),
        );
        assert.deepEqual(
          new Set(await workersOf(gw, answers.map((a) => a.requestId))),
          new Set([0, 1]),
        );
        await Deno.writeTextFile(file, JSON.stringify({ ...next, workers: "many" }));
        Deno.kill(gw.process.pid, "SIGHUP");
        const [rejected] = await gw.lines((l) =>
          l.msg === "config_reload" && l.outcome === "rejected"
        );
        assert.match(String(rejected.errors), /workers/);
        answers = await late();
        assert.deepEqual(answers.map((a) => a.status), Array(16).fill(200), "still the last good");
        assert.equal((await send(`${gw.url}/v1/models`, openaiHeaders(HASHED_KEY))).status, 200);
      },
    );

    await t.step(
      "SIGTERM drains both threads: streams in flight finish, then the exit",
      async () => {
        const streams = Array.from(
          { length: 6 },
          () =>
            send(`${gw.url}/v1/chat/completions`, openaiHeaders(), {
              model: "chat-slow-text",
              stream: true,
              messages: [{ role: "user", content: "hi" }],
            }),
        );
        await new Promise((r) => setTimeout(r, 400));
        Deno.kill(gw.process.pid, "SIGTERM");
        const answers = await Promise.all(streams);
        for (const a of answers) {
          assert.equal(a.status, 200);
          assert.match(String(a.json.text), /data: \[DONE\]/, "ended as the format ends");
        }
        const { code } = await gw.output();
        exited = true;
        assert.equal(code, 0);
      },
    );
  } finally {
    if (!exited) {
      gw.process.kill("SIGKILL");
      await gw.output();
    }
    await upstream.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Two gateway threads of tests/workers/crash_once.ts (plain ones without its flag variable)
 * supervised in this process, whose calls and logs the tests can see.
 */
function threadsOf(config: Config): Workers {
  return new Workers({
    module: new URL("./workers/crash_once.ts", import.meta.url),
    count: 2,
    config,
    load: () => config,
    builtInConfig: false,
  });
}

/**
 * Runs `body` on two threads of tests/workers/crash_once.ts, one of which throws an uncaught
 * error at its first ping, with the supervisor's stderr lines captured; then stops them.
 */
async function withCrashingThread(
  body: (
    workers: Workers,
    logged: string[],
    /** Whether the supervisor logged `msg` (waited for 10 s at most). */
    logs: (msg: string) => Promise<boolean>,
  ) => Promise<void>,
) {
  const upstream = await startMockUpstream();
  const dir = await Deno.makeTempDir();
  const flag = `${dir}/crash-once`;
  await Deno.writeTextFile(flag, "");
  Deno.env.set("GATEWAY_TEST_CRASH_FLAG", flag);
  const config = await workersConfig(upstream.url);
  const logged: string[] = [];
  const error = console.error;
  console.error = (line: string) => logged.push(line);
  const workers = threadsOf(config);
  const logs = async (msg: string) => {
    const started = Date.now();
    const said = () => logged.some((l) => l.includes(`"msg":"${msg}"`));
    while (!said() && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 10));
    return said();
  };
  try {
    await body(workers, logged, logs);
  } finally {
    // Right after the body: a restart still waiting must not outlive the stop (the op
    // sanitizer fails a test that leaves its timer running).
    await workers.stop();
    console.error = error;
    Deno.env.delete("GATEWAY_TEST_CRASH_FLAG");
    await upstream.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("workers: a thread that dies is replaced within seconds, and logged", async () => {
  await withCrashingThread(async (workers, logged, logs) => {
    const { port } = await workers.start();
    const started = Date.now();
    assert.ok(await logs("worker restarted"), logged.join("\n"));
    assert.ok(Date.now() - started < 10_000);
    const died = logged.map((l) => JSON.parse(l)).find((l) => l.msg === "worker died");
    assert.equal(died?.level, "error");
    assert.match(died.error, /crash test/);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => send(`http://127.0.0.1:${port}/v1/models`, openaiHeaders())),
    );
    assert.deepEqual(answers.map((a) => a.status), Array(8).fill(200));
  });
});

Deno.test("workers: a thread that dies as the gateway stops leaves no restart behind", async () => {
  await withCrashingThread(async (workers, logged, logs) => {
    await workers.start();
    // The stop comes within the restart's wait (250 ms).
    assert.ok(await logs("worker died"), logged.join("\n"));
  });
});

Deno.test("workers: a key without limits and a route that keeps nothing cost the supervisor no call", async () => {
  const upstream = await startMockUpstream();
  const config = await workersConfig(upstream.url);
  const workers = threadsOf(config);
  try {
    const url = `http://127.0.0.1:${(await workers.start()).port}`;
    const chat = (key: string, stream: boolean) =>
      send(`${url}/v1/chat/completions`, openaiHeaders(key), {
        model: "chat-text",
        stream,
        messages: [{ role: "user", content: "hi" }],
      });
    const plain = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => chat(KEY, i % 2 === 1)),
      ...Array.from({ length: 4 }, () =>
        send(`${url}/v1/responses`, openaiHeaders(), {
          model: "msg-text",
          input: "hi",
          store: false,
        })),
      ...Array.from(
        { length: 2 },
        () =>
          send(`${url}/v1beta/interactions`, { "x-goog-api-key": KEY }, {
            model: "gem-text",
            input: "hi",
            store: false,
          }),
      ),
      ...Array.from({ length: 2 }, () =>
        send(`${url}/v1/messages`, anthropicHeaders(), {
          model: "msg-text",
          max_tokens: 16,
          messages: [{ role: "user", content: "hi" }],
        })),
    ]);
    assert.deepEqual(plain.map((a) => a.status), Array(16).fill(200));
    const frames = { type: "response.create", model: "msg-text", input: "hi", store: false };
    const socket = await wsExchange(url, [frames, frames]);
    assert.deepEqual(socket.map((r) => r.at(-1)!.type), Array(2).fill("response.completed"));
    assert.equal(workers.storeCalls, 0, "no message to the supervisor for a plain request");
    assert.equal((await chat(LIMITED_KEY, false)).status, 200);
    assert.equal(workers.storeCalls, 2, "a limited identity's request: its admission and count");
    assert.equal((await chat(TPM_KEY, false)).status, 200);
    assert.equal(workers.storeCalls, 5, "a token-limited one's: its admission, hold and count");
  } finally {
    await workers.stop();
    await upstream.close();
  }
});
