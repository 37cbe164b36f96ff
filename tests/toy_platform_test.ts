/**
 * "A new platform is one plugin, with no edit under src/": a toy cloud platform
 * (tests/toy_platform/) carrying the Messages format, next to the real formats' providers on
 * the mock upstream, over real HTTP on loopback. It proves each capability of the platform
 * contract: its config block; address (URLs, the operations it serves); authenticate (a minted
 * token, cached, scrubbed, re-minted on a 401); adjust the body; frame (re-framed streams,
 * in-stream exceptions); read errors; and model names (per-model family).
 */
import assert from "node:assert/strict";
import { type Config, ConfigError, validateConfig } from "../src/config/config.ts";
import { Formats } from "../src/request/formats.ts";
import { DEFAULT_OPERATIONS } from "../src/kit/platform.ts";
import { PLUGINS } from "../plugins/mod.ts";
import { anthropicHeaders, bodies, mockConfig, openaiHeaders, post } from "./helpers.ts";
import { platformConfig, sseEvents, startPlatformGateway } from "./platform_harness.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { TOY_VERSION, toyPlatform } from "./toy_platform/platform.ts";
import { startToyCloud, TOY_SECRET, TOY_TENANT } from "./toy_platform/upstream.ts";

type Obj = Record<string, unknown>;

const FORMATS = new Formats(PLUGINS, [toyPlatform]);

function toyProvider(url: string, extra: Obj = {}): Obj {
  return {
    name: "toy",
    api: "messages",
    platform: "toy-cloud",
    base_url: url,
    toy: { tenant: TOY_TENANT, secret: TOY_SECRET },
    ...extra,
  };
}

async function toyConfig(mockUrl: string, toyUrl: string): Promise<Config> {
  const base = await mockConfig(mockUrl);
  const fallback = (model: string) => ({
    models: [`fo-${model}`],
    targets: [{ provider: "toy", model }, { provider: "anthropic", model: "msg-text" }],
  });
  return validateConfig({
    ...base,
    providers: [...base.providers, toyProvider(toyUrl)],
    routes: [
      { models: ["toy-*"], provider: "toy" },
      fallback("toy-busy"),
      fallback("toy-earlyerr"),
      ...base.routes,
    ],
    metrics: { hostname: "127.0.0.1", port: 0 },
  });
}

/** Config errors of `providers` checked against the toy platform. */
function configErrors(providers: Obj[]): string {
  try {
    platformConfig(
      { providers, routes: [{ models: ["*"], provider: providers[0].name }] },
      FORMATS,
    );
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  return "";
}

Deno.test("toy platform: its block is checked by its schema, at the block's path", () => {
  const url = "http://127.0.0.1:1";
  assert.equal(configErrors([toyProvider(url)]), "");
  assert.match(
    configErrors([toyProvider(url, { toy: { tenant: "Acme!", secret: TOY_SECRET } })]),
    /providers\[0\]\.toy\.tenant: lower-case letters/,
  );
  assert.match(configErrors([toyProvider(url, { toy: undefined })]), /providers\[0\]\.toy: /);
  assert.match(
    configErrors([toyProvider(url, { aws: { region: "x" } })]),
    /providers\[0\]\.aws: unknown field \(platform toy-cloud reads toy\)/,
  );
  assert.match(
    configErrors([toyProvider(url, { api: "chat" })]),
    /providers\[0\]\.api: platform toy-cloud carries api messages/,
  );
  assert.match(
    configErrors([toyProvider(url, { platform: "nimbus" })]),
    /providers\[0\]\.platform: unknown platform \(one of toy-cloud\)/,
  );
  assert.match(configErrors([toyProvider(url, { base_url: undefined })]), /base_url: required/);
  // A block on a provider without a platform is an unknown key, as before platforms.
  assert.match(
    configErrors([{ name: "a", api: "messages", base_url: url, toy: {} }]),
    /providers\[0\]\.toy: unknown field/,
  );
});

Deno.test("toy platform: a platform plugin served without an edit under src/", async (t) => {
  const mock = await startMockUpstream();
  const toy = await startToyCloud();
  const { url, gw, logs, close } = await startPlatformGateway(
    await toyConfig(mock.url, toy.url),
    FORMATS,
  );
  const messages = (body: unknown) => post(`${url}/v1/messages`, anthropicHeaders(), body);
  const toyCalls = () => toy.requests.filter((r) => r.path.startsWith("/t/"));

  try {
    await t.step("a messages client is relayed: URL, adjusted body, minted token", async () => {
      const res = await messages(bodies.messages("toy-text"));
      assert.equal(res.status, 200);
      const json = await res.json();
      assert.equal(json.type, "message");
      assert.ok(json.content[0].text.length > 0);
      const res2 = await messages(bodies.messages("toy-text"));
      await res2.body?.cancel();
      const [first, second] = toyCalls();
      assert.equal(first.path, `/t/${TOY_TENANT}/models/toy-text/generate`);
      assert.deepEqual(
        { model: first.json?.model, stream: first.json?.stream, v: first.json?.toy_version },
        { model: undefined, stream: undefined, v: TOY_VERSION },
      );
      assert.equal(first.headers["anthropic-version"], undefined);
      // One token for both calls; the client's key never goes upstream.
      assert.equal(toy.minted.length, 1);
      assert.equal(first.headers.authorization, `Toy ${toy.minted[0]}`);
      assert.equal(second.headers.authorization, first.headers.authorization);
      assert.ok(!JSON.stringify(first.headers).includes(anthropicHeaders()["x-api-key"]));
    });

    await t.step("a relayed stream is re-framed from NDJSON into the format's SSE", async () => {
      const res = await messages(bodies.messages("toy-text", true));
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
      const text = await res.text();
      const events = sseEvents(text);
      assert.equal(events[0].type, "message_start");
      assert.equal(events.at(-1)!.type, "message_stop");
      assert.match(text, /^event: message_start\ndata: /);
      assert.equal(toyCalls().at(-1)!.path, `/t/${TOY_TENANT}/models/toy-text/stream`);
    });

    await t.step("a chat client is converted onto the platform, streams too", async () => {
      const res = await post(`${url}/v1/chat/completions`, openaiHeaders(), {
        ...bodies.chat("toy-text", true),
      });
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.match(text, /"content":"/);
      assert.match(text, /data: \[DONE\]\n\n$/);
      assert.equal(toyCalls().at(-1)!.json?.toy_version, TOY_VERSION);
    });

    await t.step("token counting goes to the platform's count operation", async () => {
      const res = await post(`${url}/v1/messages/count_tokens`, anthropicHeaders(), {
        model: "toy-text",
        messages: [{ role: "user", content: "hi" }],
      });
      assert.deepEqual(await res.json(), { input_tokens: 7 });
      assert.equal(toyCalls().at(-1)!.path, `/t/${TOY_TENANT}/count`);
    });

    await t.step("a refused token is re-minted once and the call sent again", async () => {
      toy.expireTokens();
      const res = await messages(bodies.messages("toy-text"));
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.equal(toy.minted.length, 2);
      assert.equal(toyCalls().at(-1)!.headers.authorization, `Toy ${toy.minted[1]}`);
    });

    await t.step("a minted token echoed upstream is scrubbed like a configured key", async () => {
      const res = await messages(bodies.messages("toy-echo"));
      const text = await res.text();
      assert.ok(text.includes("[redacted]"), text);
      for (const token of toy.minted) assert.ok(!text.includes(token));
      assert.ok(!text.includes(TOY_SECRET));
    });

    await t.step("the platform's error header reads as overloaded: failover", async () => {
      const res = await messages(bodies.messages("fo-toy-busy"));
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-gateway-provider"), "anthropic");
      assert.equal(res.headers.get("x-gateway-attempts"), "2");
      await res.body?.cancel();
    });

    await t.step("an in-stream exception before content fails over like a 429", async () => {
      const res = await messages(bodies.messages("fo-toy-earlyerr", true));
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-gateway-provider"), "anthropic");
      const events = sseEvents(await res.text());
      assert.equal(events.at(-1)!.type, "message_stop");
    });

    await t.step("an exception after content ends the stream with the interruption", async () => {
      const res = await messages(bodies.messages("toy-errevent", true));
      const events = sseEvents(await res.text());
      assert.ok(events.some((e) => e.type === "content_block_delta"));
      assert.deepEqual(events.at(-1)!.error, {
        type: "upstream_interrupted",
        message: "slow down",
      });
    });

    await t.step("metrics name the platform, the access log its provider", () => {
      const text = gw.metrics.expose();
      assert.match(text, /gen_ai_provider_name="toy\.cloud"/);
      assert.ok(logs.some((l) => l.provider === "toy"));
    });

    await t.step("the platform says a model's family: signatures stay on it", () => {
      const family = (model: string) =>
        FORMATS.platforms.family(gw.config.providers.find((p) => p.name === "toy")!, model);
      assert.equal(family("other.model"), "toy-other");
      assert.equal(family("toy-text"), undefined);
    });
  } finally {
    await close();
    await mock.close();
    await toy.close();
  }
});

Deno.test("toy platform: an operation its address does not list is refused, nothing sent", async () => {
  // The same cloud, serving generation only.
  const lite = {
    ...toyPlatform,
    id: "toy-lite",
    address: { ...toyPlatform.address, operations: ["generate"] as const },
  };
  const formats = new Formats(PLUGINS, [lite]);
  const toy = await startToyCloud();
  const { url, close } = await startPlatformGateway(
    platformConfig({
      providers: [toyProvider(toy.url, { name: "lite", platform: "toy-lite" })],
      routes: [{ models: ["lite-*"], provider: "lite" }],
    }, formats),
    formats,
  );
  try {
    const counted = await post(`${url}/v1/messages/count_tokens`, anthropicHeaders(), {
      model: "lite-text",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(counted.status, 400);
    assert.deepEqual((await counted.json()).error, {
      type: "invalid_request_error",
      message:
        `/v1/messages/count_tokens is not served through platform toy-lite ("lite-*" → lite (messages))`,
    });
    assert.deepEqual(toy.requests.filter((r) => r.path.startsWith("/t/")), []);
    const generated = await post(
      `${url}/v1/messages`,
      anthropicHeaders(),
      bodies.messages("lite-text"),
    );
    assert.equal(generated.status, 200);
    await generated.body?.cancel();
    assert.equal(toy.requests.at(-1)!.path, `/t/${TOY_TENANT}/models/lite-text/generate`);
  } finally {
    await close();
    await toy.close();
  }
});

Deno.test("toy platform: embeddings reach a platform only where its address lists them", async () => {
  // The same cloud carrying OpenAI's chat wire (whose providers have embeddings): as is, serving
  // the default operations, and listing embeddings too.
  const plain = { ...toyPlatform, id: "toy-chat", apis: ["chat"] };
  const operations = [...DEFAULT_OPERATIONS, "embeddings"] as const;
  const listing = { ...plain, id: "toy-embed", address: { ...toyPlatform.address, operations } };
  const formats = new Formats(PLUGINS, [plain, listing]);
  const toy = await startToyCloud();
  const { url, close } = await startPlatformGateway(
    platformConfig({
      providers: [
        toyProvider(toy.url, { name: "plain", api: "chat", platform: "toy-chat" }),
        toyProvider(toy.url, { name: "listing", api: "chat", platform: "toy-embed" }),
      ],
      routes: [
        { models: ["plain-*"], provider: "plain" },
        { models: ["listing-*"], provider: "listing" },
      ],
    }, formats),
    formats,
  );
  const sent = () => toy.requests.filter((r) => r.path.startsWith("/t/"));
  try {
    const refused = await post(`${url}/v1/embeddings`, openaiHeaders(), {
      model: "plain-emb",
      input: ["hi"],
    });
    assert.equal(refused.status, 400);
    const { error } = await refused.json();
    assert.equal(error.message, "provider plain (api chat on toy-chat) has no embeddings endpoint");
    assert.equal(error.param, "model");
    assert.deepEqual(sent(), []);
    // Listed, the call goes out at the platform's address (the toy cloud knows no embeddings).
    const reached = await post(`${url}/v1/embeddings`, openaiHeaders(), {
      model: "listing-emb",
      input: ["hi"],
    });
    await reached.body?.cancel();
    assert.deepEqual(sent().map((r) => r.path), [`/t/${TOY_TENANT}/models/listing-emb/generate`]);
  } finally {
    await close();
    await toy.close();
  }
});
