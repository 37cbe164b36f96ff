/**
 * `workers: 2`: main.ts as a real process whose two gateway threads share one port, behaving as
 * one gateway without Redis — a requests_per_minute limit exact across them, Responses and
 * Interactions chains continued on the other thread (HTTP and WebSocket), one `/metrics` that is
 * the exact sum, one reload (SIGHUP) reaching both and a rejected one leaving both as they were,
 * SIGTERM draining both; and a thread that dies is replaced within seconds, logged.
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { Workers } from "../src/workers.ts";
import { HASHED_KEY, KEY, mockConfig, openaiHeaders, send, wsExchange } from "./helpers.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { spawnGateway, type WatchedGateway } from "./process.ts";

/** A key limited to LIMIT requests a minute. */
const LIMITED_KEY = "gw-limited-key-0001";
const LIMIT = 7;
const CLIENTS = 64;

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

async function workersConfig(upstream: string): Promise<Config> {
  const config = await mockConfig(upstream);
  config.workers = 2;
  config.keys.push({ name: "limited", key: LIMITED_KEY, limits: { requests_per_minute: LIMIT } });
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

Deno.test("workers: a thread that dies is replaced within seconds, and logged", async () => {
  const upstream = await startMockUpstream();
  const dir = await Deno.makeTempDir();
  const flag = `${dir}/crash-once`;
  await Deno.writeTextFile(flag, "");
  Deno.env.set("GATEWAY_TEST_CRASH_FLAG", flag);
  const config = await workersConfig(upstream.url);
  const logged: string[] = [];
  const error = console.error;
  console.error = (line: string) => logged.push(line);
  const workers = new Workers({
    module: new URL("./workers/crash_once.ts", import.meta.url),
    count: 2,
    config,
    load: () => config,
    builtInConfig: false,
  });
  try {
    const { port } = await workers.start();
    const started = Date.now();
    while (!logged.some((l) => l.includes('"worker restarted"')) && Date.now() - started < 10_000) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const died = logged.map((l) => JSON.parse(l)).find((l) => l.msg === "worker died");
    assert.equal(died?.level, "error");
    assert.match(died.error, /crash test/);
    assert.ok(logged.some((l) => l.includes('"worker restarted"')), logged.join("\n"));
    assert.ok(Date.now() - started < 10_000);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => send(`http://127.0.0.1:${port}/v1/models`, openaiHeaders())),
    );
    assert.deepEqual(answers.map((a) => a.status), Array(8).fill(200));
  } finally {
    console.error = error;
    Deno.env.delete("GATEWAY_TEST_CRASH_FLAG");
    await workers.stop();
    await upstream.close();
    await Deno.remove(dir, { recursive: true });
  }
});
