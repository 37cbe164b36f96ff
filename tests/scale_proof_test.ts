/**
 * The proof that many gateways are one (docs/scaling.md): a real Redis Cluster (three masters,
 * a replica each) holding limits and stored conversations, three gateway processes — the third
 * with `workers: 2` — and nginx balancing round-robin in front, as Kong would:
 * - 64 clients at once on a `requests_per_minute: 10` identity: exactly 10 pass, and the
 *   provider sees 10 calls; a `tokens_per_minute` identity counts exactly what it admitted and
 *   passes its limit by less than one answer (its reservations admit one request at a time);
 * - a Responses chain over the three instances (HTTP on one, a WebSocket continuing it on
 *   another, HTTP again on the third), and an Interactions chain likewise;
 * - one instance SIGKILLed mid-stream: its streams end within 3 s, the others' finish, and every
 *   finished request is counted;
 * - the master holding the tested identity's keys killed: limits answer per `on_error`, chains
 *   and reads a 503 in the client's dialect within the store's timeout, requests that chain
 *   nothing 200; after its replica is promoted everything works again within 10 s, without a
 *   restart, and what was kept before is read — also through a cluster link that sent nothing
 *   while the master was down (it must learn the new slot map all the same).
 * Ignored with a message when redis-server or nginx is missing (.ci/install-*.sh).
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { DEFAULT_OUTPUT_TOKENS, tokensFor } from "../src/ops/estimate.ts";
import { HASHED_KEY, KEY, mockConfig, openaiHeaders, send, wsExchange } from "./helpers.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { spawnGateway, type WatchedGateway } from "./process.ts";
import { nginxBinary, startNginx } from "./proxy/nginx.ts";
import { MISSING, REDIS, redisCli } from "./redis_server.ts";
import { startRedisCluster } from "./redis_cluster.ts";
import { spendByWaves } from "./token_waves.ts";
import { ClusterLink } from "../src/state/redis_cluster.ts";

const NGINX = await nginxBinary();
if (REDIS === undefined) console.warn(MISSING);
if (NGINX === undefined) console.warn("nginx not installed: run .ci/install-proxy-tools.sh");

const RPM_KEY = "gw-rpm-limited-0001";
const TPM_KEY = "gw-tpm-limited-0001";
const STREAM_KEY = "gw-stream-counted-01";
const RPM = 10;
const TPM = 100;
const CLIENTS = 64;
/** Tokens of one mock chat answer (11 in, 7 out). */
const U = 18;
const STORE_TIMEOUT_MS = 500;
const LIMITS_TIMEOUT_MS = 2000;

function clusterConfig(config: Config, urls: string[]): Config {
  config.keys[0].limits = { requests_per_minute: 10_000 };
  config.keys.push(
    { name: "rpm", key: RPM_KEY, limits: { requests_per_minute: RPM } },
    { name: "tpm", key: TPM_KEY, limits: { tokens_per_minute: TPM } },
    { name: "streams", key: STREAM_KEY, limits: { tokens_per_day: 1_000_000 } },
  );
  // A generous timeout: a call that runs out of it is admitted uncounted (on_error: allow), which
  // a busy CI machine must not turn into a miscount.
  config.limits_store = {
    ...config.limits_store,
    redis_cluster: urls,
    on_error: "allow",
    timeout_ms: LIMITS_TIMEOUT_MS,
  };
  config.response_store = {
    ...config.response_store,
    redis_cluster: urls,
    redis_timeout_ms: STORE_TIMEOUT_MS,
  };
  return config;
}

const chat = (stream = false, model = "chat-text") => ({
  model,
  stream,
  messages: [{ role: "user", content: "hi" }],
});

/** Until every thread of `gw` reaches both stores (their clients connect in the background). */
async function untilReady(gw: WatchedGateway) {
  let inARow = 0;
  for (let i = 0; i < 200 && inARow < 8; i++) {
    const usage = await send(`${gw.url}/v1/gateway/usage`, openaiHeaders());
    const read = await send(`${gw.url}/v1/responses/resp_${"0".repeat(32)}`, openaiHeaders());
    inARow = usage.status === 200 && read.status === 404 ? inARow + 1 : 0;
    if (inARow === 0) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(inARow >= 8, `${gw.url} never reached the Redis Cluster:\n${gw.stderr()}`);
}

Deno.test({
  name: "scale proof: three instances (one of 2 workers) behind nginx on a Redis Cluster are one",
  ignore: REDIS === undefined || NGINX === undefined,
  async fn(t) {
    const cluster = await startRedisCluster();
    const upstream = await startMockUpstream();
    const dir = await Deno.makeTempDir();
    const file = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(
      file,
      JSON.stringify(clusterConfig(await mockConfig(upstream.url), cluster.urls)),
    );
    const entry = new URL("../main.ts", import.meta.url).pathname;
    const instances = await Promise.all(
      ([{}, {}, { GATEWAY_WORKERS: "2" }] as Record<string, string>[]).map((env) =>
        spawnGateway(entry, ["--config", file], env)
      ),
    );
    const [a, b, c] = instances;
    const killed = new Set<WatchedGateway>();
    /** A link of the gateway's own kind that is sent nothing until after the promotion. */
    const idle = new ClusterLink(cluster.urls, () => {});
    const ports = instances.map((g) => Number(new URL(g.url).port));
    const nginx = await startNginx({
      upstreamPort: ports[0],
      morePorts: ports.slice(1),
      http2: false,
    });
    /** Through nginx, on a connection of its own. */
    const viaProxy = async (path: string, headers: Record<string, string>, body?: unknown) => {
      const client = Deno.createHttpClient({ caCerts: [nginx.caPem] });
      try {
        const res = await fetch(nginx.url + path, {
          client,
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        });
        let text = "";
        let cut = false;
        try {
          text = await res.text();
        } catch {
          cut = true; // the connection ended before the body did
        }
        return { status: res.status, text, cut, at: Date.now() };
      } finally {
        client.close();
      }
    };
    /** What the instances said about their limits store, if anything (a timeout admits). */
    const storeErrors = () =>
      instances.flatMap((g) => g.stderr().split("\n").filter((l) => l.includes("limits store")))
        .map((l) => `\n${l}`).join("");
    const posts = () => upstream.requests.filter((r) => r.method === "POST").length;
    const used = async (key: string, limit: string) => {
      const usage = await send(`${a.url}/v1/gateway/usage`, openaiHeaders(key));
      return (usage.json.windows as Record<string, { used: number }>)[limit].used;
    };
    try {
      assert.match(c.stderr(), /\(2 workers\)/);
      await Promise.all(instances.map(untilReady));

      await t.step(
        `${CLIENTS} clients at once, requests_per_minute ${RPM}: exactly ${RPM}`,
        async () => {
          const before = posts();
          const answers = await Promise.all(
            Array.from(
              { length: CLIENTS },
              () => viaProxy("/v1/chat/completions", openaiHeaders(RPM_KEY), chat()),
            ),
          );
          const statuses = answers.map((r) => r.status);
          assert.equal(
            statuses.filter((s) => s === 200).length,
            RPM,
            `${statuses}${storeErrors()}`,
          );
          assert.equal(statuses.filter((s) => s === 429).length, CLIENTS - RPM);
          assert.equal(posts() - before, RPM, "the provider saw exactly those");
          for (const g of instances) {
            const lines = await g.lines((l) => l.identity === "rpm");
            assert.ok(lines.length > 0, `${g.url} answered some`);
          }
        },
      );

      await t.step(
        "tokens_per_minute: exactly u × admitted counted, past the limit by less than one answer",
        () =>
          spendByWaves({
            request: () => viaProxy("/v1/chat/completions", openaiHeaders(TPM_KEY), chat()),
            clients: CLIENTS,
            used: () => used(TPM_KEY, "tokens_per_minute"),
            limit: TPM,
            answer: U,
            storeErrors,
          }),
      );

      await t.step("a Responses chain: HTTP on A, a WebSocket on B, HTTP on C", async () => {
        const first = await send(`${a.url}/v1/responses`, openaiHeaders(), {
          model: "msg-text",
          input: "The password is swordfish.",
        });
        assert.equal(first.status, 200, JSON.stringify(first.json));
        const [ws] = await wsExchange(b.url, [
          {
            type: "response.create",
            model: "msg-text",
            input: "x",
            previous_response_id: first.json.id,
          },
        ]);
        const done = ws.at(-1)!;
        assert.equal(done.type, "response.completed", JSON.stringify(ws));
        assert.match(upstream.requests.at(-1)!.body, /swordfish/);
        const third = await send(`${c.url}/v1/responses`, openaiHeaders(), {
          model: "gem-text",
          input: "What was it?",
          previous_response_id: (done.response as { id: string }).id,
        });
        assert.equal(third.status, 200, JSON.stringify(third.json));
        assert.match(upstream.requests.at(-1)!.body, /swordfish/);
      });

      const interaction = async (g: WatchedGateway, input: string, previous?: string) =>
        await send(`${g.url}/v1beta/interactions`, { "x-goog-api-key": KEY }, {
          model: "gem-text",
          input,
          ...previous && { previous_interaction_id: previous },
        });
      let lastInteraction = "";
      await t.step("an Interactions chain: A, then B, then C", async () => {
        let previous: string | undefined;
        for (
          const [g, input] of [[a, "The colour is teal."], [b, "Remember it."], [
            c,
            "Which?",
          ]] as const
        ) {
          const res = await interaction(g, input, previous);
          assert.equal(res.status, 200, JSON.stringify(res.json));
          previous = String(res.json.id);
        }
        assert.match(upstream.requests.at(-1)!.body, /teal[\s\S]*Remember it/);
        lastInteraction = previous!;
      });

      await t.step(
        "B killed (SIGKILL) mid-stream: its streams end within 3 s, none else lost",
        async () => {
          const streams = Array.from({ length: 6 }, () =>
            viaProxy(
              "/v1/chat/completions",
              openaiHeaders(STREAM_KEY),
              chat(true, "chat-slow-chunks8-text"),
            ));
          await new Promise((r) => setTimeout(r, 800));
          const killedAt = Date.now();
          b.process.kill("SIGKILL");
          killed.add(b);
          const answers = await Promise.all(streams);
          const finished = answers.filter((r) => r.text.includes("data: [DONE]"));
          const cut = answers.filter((r) => !r.text.includes("data: [DONE]"));
          assert.ok(
            cut.length > 0 && finished.length > 0,
            `${cut.length} cut, ${finished.length} whole`,
          );
          for (const r of cut) {
            assert.ok(r.at - killedAt < 3000, `ended ${r.at - killedAt} ms after`);
          }
          // What B reserved for its streams stays held until the reservation lapses (10 minutes,
          // docs/limits.md): the answers A and C finished count exactly, nothing twice.
          const held = tokensFor(JSON.stringify(chat(true, "chat-slow-chunks8-text")).length) +
            DEFAULT_OUTPUT_TOKENS;
          assert.equal(
            await used(STREAM_KEY, "tokens_per_day"),
            U * finished.length + held * cut.length,
          );
        },
      );

      const owner = await cluster.shardOf("{team-a}");
      const other = await cluster.shardOf("{team-b}");
      const kept = await send(`${a.url}/v1/responses`, openaiHeaders(), {
        model: "msg-text",
        input: "The code is 4711.",
      });
      assert.equal(kept.status, 200);
      const keptElsewhere = await send(`${a.url}/v1/responses`, openaiHeaders(HASHED_KEY), {
        model: "msg-text",
        input: "The name is Bond.",
      });
      // Replication is asynchronous: what a master acknowledged a moment before it died may be
      // lost (docs/scaling.md). Here the replica has it.
      await redisCli(owner.master, "WAIT", "1", "2000");
      for (let i = 0; i < 100 && !idle.isReady; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(idle.isReady, "the idle link connected");
      await cluster.kill(owner.master);

      await t.step(
        "the master of team-a's slot killed: 503 for chains and reads, 200 for the rest",
        async () => {
          for (const g of [a, c]) {
            const started = Date.now();
            const chained = await send(`${g.url}/v1/responses`, openaiHeaders(), {
              model: "msg-text",
              input: "x",
              previous_response_id: kept.json.id,
            });
            assert.equal(chained.status, 503, JSON.stringify(chained.json));
            assert.match(
              (chained.json.error as { message: string }).message,
              /the response store \(redis\) is unavailable/,
            );
            assert.ok(Date.now() - started < STORE_TIMEOUT_MS + 1000, "within the store's timeout");
            const read = await send(`${g.url}/v1/responses/${kept.json.id}`, openaiHeaders());
            assert.equal(read.status, 503);
            const chainedInteraction = await interaction(g, "x", lastInteraction);
            assert.equal(chainedInteraction.status, 503);
            assert.equal(
              (chainedInteraction.json.error as { status: string }).status,
              "UNAVAILABLE",
            );
            // Limits: on_error allow. Chaining nothing: answered, not kept.
            const plain = await send(`${g.url}/v1/chat/completions`, openaiHeaders(), chat());
            assert.equal(plain.status, 200);
            const unchained = await send(`${g.url}/v1/responses`, openaiHeaders(), {
              model: "msg-text",
              input: "hi",
            });
            assert.equal(unchained.status, 200);
          }
          // Another owner's slot on a live master: its chains go on.
          if (other.master !== owner.master) {
            const elsewhere = await send(`${a.url}/v1/responses`, openaiHeaders(HASHED_KEY), {
              model: "msg-text",
              input: "x",
              previous_response_id: keptElsewhere.json.id,
            });
            assert.equal(elsewhere.status, 200, JSON.stringify(elsewhere.json));
          }
        },
      );

      await t.step(
        "its replica promoted: within 10 s everything works, what was kept is read",
        async () => {
          await cluster.promote(owner.replica);
          const promoted = Date.now();
          for (const g of [a, c]) {
            let chained;
            do {
              chained = await send(`${g.url}/v1/responses`, openaiHeaders(), {
                model: "msg-text",
                input: "What is the code?",
                previous_response_id: kept.json.id,
              });
              if (chained.status !== 200) await new Promise((r) => setTimeout(r, 200));
            } while (chained.status !== 200 && Date.now() - promoted < 10_000);
            assert.equal(chained.status, 200, JSON.stringify(chained.json));
            assert.match(upstream.requests.at(-1)!.body, /4711/);
          }
          // The Interactions chain too, within the same 10 s (its store call may reach a slot
          // whose new master this instance has not met yet: a 503 until it has).
          let chainedInteraction;
          do {
            chainedInteraction = await interaction(c, "And?", lastInteraction);
            if (chainedInteraction.status !== 200) await new Promise((r) => setTimeout(r, 200));
          } while (chainedInteraction.status !== 200 && Date.now() - promoted < 10_000);
          assert.equal(chainedInteraction.status, 200, JSON.stringify(chainedInteraction.json));
          assert.ok(Date.now() - promoted < 10_000, `${Date.now() - promoted} ms`);
          const read = await send(`${c.url}/v1/responses/${kept.json.id}`, openaiHeaders());
          assert.equal(read.status, 200);
          // A thread or instance that served nothing of the dead master's slots during the outage
          // (here: a link that sent nothing) answers its first command from the new master.
          await new Promise((r) => setTimeout(r, Math.max(0, promoted + 3000 - Date.now())));
          const record = await idle.get(`gateway:responses:{team-a}:r:${kept.json.id}`, 1000);
          assert.match(String(record), /4711/);
        },
      );
    } finally {
      await idle.close();
      for (const g of instances) {
        if (!killed.has(g)) g.process.kill("SIGTERM");
        await g.output();
      }
      await nginx.stop();
      await upstream.close();
      await cluster.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
