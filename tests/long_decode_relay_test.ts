/**
 * Long decode on relayed routes: a Gemini or Interactions client on a route of its own format
 * gets `CONTINUATION` / `requires_continuation` and the token untouched and runs the hops
 * itself (@google/genai's automatic continuation, on by default); each continuation is routed,
 * limited and counted like any request, and reaches the provider account that issued its token
 * (a key pool or several targets would otherwise send it elsewhere, where Google refuses it —
 * as the mock does, tests/mock/long_decode.ts).
 */
import assert from "node:assert/strict";
import { GoogleGenAI } from "./sdk/deps.ts";
import { type Harness, HASHED_KEY, KEY, post, startHarness } from "./helpers.ts";
import type { Config } from "../src/config/config.ts";

const POOL = ["gk-pool-key-zero", "gk-pool-key-one"];
const BUDGET = 200_000;
const WHOLE = (vendor: string) =>
  `Hello from ${vendor} mock: hi (0-65536)(65536-131072)(131072-132072)`;

/**
 * The Gemini and Interactions providers with a key pool of two, and `pair-*`: two Gemini
 * providers (two accounts), load-balanced.
 */
function pools(config: Config) {
  for (const p of config.providers) {
    if (p.name === "gemini" || p.name === "gemini-int") {
      p.api_keys = POOL;
      delete p.api_key;
    }
  }
  const gemini = config.providers.find((p) => p.name === "gemini")!;
  config.providers.push({ ...gemini, name: "gemini-b", api_keys: undefined, api_key: "gk-other" });
  config.routes.unshift({
    models: ["pair-*"],
    balance: "weighted",
    targets: [{ provider: "gemini", weight: 1 }, { provider: "gemini-b", weight: 1 }],
    passthrough: false,
  });
}

const calls = (h: Harness, path: RegExp) => h.upstream.requests.filter((r) => path.test(r.path));
const keys = (h: Harness, path: RegExp) => calls(h, path).map((r) => r.headers["x-goog-api-key"]);
const GENERATE = /:streamGenerateContent$/;

const client = (h: Harness, apiKey = KEY) =>
  new GoogleGenAI({ apiKey, httpOptions: { baseUrl: h.url } });

async function streamText(h: Harness, model: string, apiKey = KEY) {
  const chunks = await Array.fromAsync(
    await client(h, apiKey).models.generateContentStream({
      model,
      contents: "hi",
      config: { maxOutputTokens: BUDGET },
    }),
  );
  return { text: chunks.map((c) => c.text ?? "").join(""), chunks };
}

Deno.test("long decode relayed: @google/genai continues on its own, each hop on the issuing key", async () => {
  const h = await startHarness({ tweak: pools });
  try {
    // Twice: whichever key the first hop gets, its continuations follow it.
    for (const round of [0, 1]) {
      const before = calls(h, GENERATE).length;
      const { text, chunks } = await streamText(h, "gem-long3");
      assert.equal(text, WHOLE("generate-content"), `round ${round}`);
      // The SDK sums every hop's usage; the gateway relayed each hop's own.
      const usage = chunks.at(-1)!.usageMetadata!;
      assert.equal(usage.candidatesTokenCount, 132_072);
      assert.equal(usage.promptTokenCount, 11 * 3 + 65_536 + 131_072);
      const hops = calls(h, GENERATE).slice(before);
      assert.equal(hops.length, 3);
      assert.equal(hops[0].json!.continuationToken, undefined);
      assert.ok(hops.slice(1).every((r) => /^ct_/.test(r.json!.continuationToken)));
      const used = hops.map((r) => r.headers["x-goog-api-key"]);
      assert.equal(new Set(used).size, 1, `round ${round}: ${used}`);
      assert.equal(used[0], POOL[round], "a new answer rotates the pool as before");
    }
    // Every hop is a request of its own: logged (and counted) with its own usage.
    const lines = h.logs.filter((l) => l.model === "gem-long3");
    assert.equal(lines.length, 6);
    assert.ok(lines.every((l) => l.passthrough === true && l.hops === undefined));
    assert.deepEqual(
      lines.slice(0, 3).map((l) => (l.usage as { outputTokens: number }).outputTokens),
      [65_536, 65_536, 1_000],
    );
  } finally {
    await h.close();
  }
});

Deno.test("long decode relayed: a continuation follows its account across targets", async () => {
  const h = await startHarness({ tweak: pools });
  try {
    for (const round of [0, 1, 2]) {
      const before = calls(h, GENERATE).length;
      const { text } = await streamText(h, "pair-long3");
      assert.equal(text, WHOLE("generate-content"), `round ${round}`);
      const used = keys(h, GENERATE).slice(before);
      assert.equal(used.length, 3);
      assert.equal(new Set(used).size, 1, `round ${round}: ${used}`);
    }
  } finally {
    await h.close();
  }
});

Deno.test("long decode relayed: Interactions hops, JSON and stream, stored or not, on one key", async () => {
  const h = await startHarness({ tweak: pools });
  try {
    const ai = client(h);
    const INTERACTIONS = /^\/v1beta\/interactions$/;
    for (const store of [true, false]) {
      for (const stream of [false, true]) {
        const label = `store ${store}, stream ${stream}`;
        const before = calls(h, INTERACTIONS).length;
        const params = {
          model: "int-long3",
          input: "hi",
          store,
          generation_config: { max_output_tokens: BUDGET },
        };
        let text: string;
        if (stream) {
          const events = await Array.fromAsync(await ai.interactions.create({ ...params, stream }));
          text = events.map((e) => {
            const delta = (e as { delta?: { type: string; text?: string } }).delta;
            return delta?.type === "text" ? delta.text : "";
          }).join("");
        } else {
          text = (await ai.interactions.create(params)).output_text!;
        }
        assert.equal(text, WHOLE("interactions"), label);
        const used = calls(h, INTERACTIONS).slice(before).map((r) => r.headers["x-goog-api-key"]);
        assert.equal(used.length, 3, label);
        assert.equal(new Set(used).size, 1, `${label}: ${used}`);
      }
    }
  } finally {
    await h.close();
  }
});

Deno.test("long decode relayed: another client's token pins nothing", async () => {
  const h = await startHarness({ tweak: pools });
  try {
    const path = "/v1beta/models/gem-long3:streamGenerateContent?alt=sse";
    const body = {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
      generationConfig: { maxOutputTokens: BUDGET },
    };
    const first = await post(h.url + path, { "x-goog-api-key": KEY }, body);
    const sse = await first.text();
    const token = sse.match(/"continuationToken":\s*"([^"]+)"/)![1];
    assert.match(sse, /"finishReason":\s*"CONTINUATION"/);
    // Team B presents team A's token: the pool rotates as for any request, to the other key,
    // where the provider refuses it.
    const stolen = await post(h.url + path, { "x-goog-api-key": HASHED_KEY }, {
      ...body,
      continuationToken: token,
    });
    assert.equal(stolen.status, 400);
    await stolen.body?.cancel();
    const [a, b] = keys(h, GENERATE);
    assert.notEqual(a, b);
    // Another request in between: the rotation is back on the issuing key, and moves past it.
    const other = await post(h.url + path, { "x-goog-api-key": KEY }, { contents: body.contents });
    await other.body?.cancel();
    assert.equal(keys(h, GENERATE).at(-1), a);
    // Team A's own continuation reaches the key that issued it.
    const own = await post(h.url + path, { "x-goog-api-key": KEY }, {
      ...body,
      continuationToken: token,
    });
    assert.equal(own.status, 200);
    // The second hop: the prompt re-read with the first hop's 65,536 tokens.
    assert.match(await own.text(), /"promptTokenCount":65547/);
    assert.equal(keys(h, GENERATE).at(-1), a);
  } finally {
    await h.close();
  }
});

Deno.test("long decode relayed: a route that converts for its other targets still relays a continuation, pinned", async () => {
  const h = await startHarness({
    tweak(config) {
      pools(config);
      // Gemini first, another family behind it: the first hop relays, and so must the others.
      config.routes.unshift({
        models: ["mix-*"],
        passthrough: false,
        targets: [
          { provider: "gemini", model: "gem-long3", weight: 1, priority: 0 },
          { provider: "oai-chat", model: "chat-text", weight: 1, priority: 1 },
        ],
      });
    },
  });
  try {
    for (const round of [0, 1]) {
      const before = calls(h, GENERATE).length;
      const { text } = await streamText(h, "mix-long3");
      assert.equal(text, WHOLE("generate-content"), `round ${round}`);
      const used = keys(h, GENERATE).slice(before);
      assert.equal(used.length, 3, `round ${round}`);
      assert.equal(new Set(used).size, 1, `round ${round}: ${used}`);
    }
    assert.equal(calls(h, /chat\/completions/).length, 0, "nothing went to the other family");
  } finally {
    await h.close();
  }
});
