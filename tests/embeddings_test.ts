/**
 * `POST /v1/embeddings` through the gateway against every embeddings wire's mock
 * (tests/embeddings_harness.ts): relayed as is where the provider speaks OpenAI's wire, else
 * converted — inputs split into the calls a wire takes (order kept, a few calls at a time, one
 * failure failing the request), `dimensions` mapped or refused, token ids only where a wire takes
 * them — and counted like generation (usage, limits, spend, metrics, access log). The Gemini
 * endpoints keep refusing the embeddings actions.
 */
import assert from "node:assert/strict";
import { CONCURRENT_CALLS } from "../src/request/embeddings.ts";
import { KEY, openaiHeaders, post } from "./helpers.ts";
import {
  embeddingCalls,
  type EmbeddingsHarness,
  mockOf,
  startEmbeddingsGateway,
  wire,
  WIRES,
} from "./embeddings_harness.ts";
import { CALLS, GEMINI_DIMENSIONS, mockTokens, mockVector } from "./mock/embeddings.ts";

type Input = string | number[];

const embed = (h: EmbeddingsHarness, body: Record<string, unknown>, key = KEY) =>
  post(`${h.url}/v1/embeddings`, openaiHeaders(key), body);

/** An answer's vectors, base64 (little-endian float32) decoded. */
function vectorsOf(json: { data: { index: number; embedding: number[] | string }[] }): number[][] {
  return json.data.map((d, i) => {
    assert.equal(d.index, i, "data in input order");
    if (typeof d.embedding !== "string") return d.embedding;
    const bytes = Uint8Array.fromBase64(d.embedding);
    const view = new DataView(bytes.buffer);
    return Array.from({ length: bytes.length / 4 }, (_, j) => view.getFloat32(j * 4, true));
  });
}

const texts = (n: number, tag = "text") => Array.from({ length: n }, (_, i) => `${tag} ${i}`);

/** The vectors the mock makes for `inputs`, `dimensions` long. */
const expected = (inputs: Input[], dimensions: number) =>
  inputs.map((i) => mockVector(i, dimensions));

/** Runs `body` on `model`; checks the answer's vectors bit for bit and returns the answer. */
async function embedded(
  h: EmbeddingsHarness,
  body: { model: string; input: Input | Input[]; dimensions?: number } & Record<string, unknown>,
  dimensions: number,
  /** The model the answer names: the route's rename (WIRES), else the one asked for. */
  answered = WIRES.find((w) => w.model === body.model)?.upstream ?? body.model,
) {
  const res = await embed(h, body);
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  const inputs =
    (typeof body.input === "string" || typeof body.input[0] === "number"
      ? [body.input]
      : body.input) as Input[];
  assert.deepEqual(vectorsOf(json), expected(inputs, dimensions));
  assert.equal(json.object, "list");
  // The model that made them (a relayed answer's own), after the route's rename.
  assert.equal(json.model, answered);
  return { res, json };
}

Deno.test("embeddings: relayed to OpenAI-wire providers, converted to every other wire", async (t) => {
  const h = await startEmbeddingsGateway({
    routes: [{ models: ["text-embedding-3-small"], provider: "openai" }],
  });
  try {
    await t.step("relayed: the client's bytes up as is, the provider's answer back", async () => {
      const text = JSON.stringify({ model: "text-embedding-3-small", input: ["a", "b"] });
      const res = await post(`${h.url}/v1/embeddings`, openaiHeaders(), text);
      const last = h.vendor.requests.at(-1)!;
      assert.equal(last.path, "/v1/embeddings");
      assert.equal(last.body, text);
      assert.equal(last.headers.authorization, "Bearer sk-provider-secret");
      assert.equal(res.headers.get("x-gateway-provider"), "openai");
      const json = await res.json();
      assert.deepEqual(vectorsOf(json), expected(["a", "b"], 12));
      assert.deepEqual(json.usage, { prompt_tokens: 2, total_tokens: 2 });
      assert.equal(h.logs.at(-1)!.passthrough, true);
    });

    for (const w of WIRES) {
      await t.step(`${w.model}: float and base64, default and asked sizes`, async () => {
        const inputs = ["The quick brown fox", "jumps over", "the lazy dog"];
        await embedded(h, { model: w.model, input: inputs, encoding_format: "float" }, w.native);
        await embedded(
          h,
          { model: w.model, input: inputs, encoding_format: "base64", dimensions: w.other },
          w.other,
        );
        const one = await embedded(h, { model: w.model, input: "alone" }, w.native);
        assert.equal(h.logs.at(-1)!.passthrough, w.relayed === true, "relayed or converted");
        assert.equal(one.res.headers.get("x-gateway-provider"), w.provider);
      });
    }

    await t.step("user goes to OpenAI's wire; elsewhere it is dropped and reported", async () => {
      const relayed = await embed(h, { model: "openai-emb", input: "x", user: "u-42" });
      assert.equal(relayed.headers.get("x-gateway-dropped-params"), null);
      await relayed.body?.cancel();
      assert.equal(h.vendor.requests.at(-1)!.json.user, "u-42");
      const split = await embed(h, { model: "openai-emb", input: texts(2049), user: "u-42" });
      assert.equal(split.headers.get("x-gateway-dropped-params"), null);
      await split.body?.cancel();
      assert.equal(h.vendor.requests.at(-1)!.json.user, "u-42");
      const converted = await embed(h, { model: "gemini-emb", input: "x", user: "u-42" });
      assert.equal(converted.headers.get("x-gateway-dropped-params"), "user");
      await converted.body?.cancel();
      assert.deepEqual(h.logs.at(-1)!.dropped, ["user"]);
    });

    await t.step("Gemini API: one input is :embedContent, more :batchEmbedContents", async () => {
      const at = h.vendor.requests.length;
      await embedded(h, { model: "gemini-emb", input: "one", dimensions: 4 }, 4);
      await embedded(h, { model: "gemini-emb", input: ["one", "two"] }, GEMINI_DIMENSIONS);
      const [one, two] = h.vendor.requests.slice(at);
      assert.equal(one.path, "/v1beta/models/gemini-embedding-001:embedContent");
      assert.deepEqual(one.json, {
        content: { parts: [{ text: "one" }] },
        outputDimensionality: 4,
      });
      assert.equal(one.headers["x-goog-api-key"], "sk-provider-secret");
      assert.equal(two.path, "/v1beta/models/gemini-embedding-001:batchEmbedContents");
      assert.deepEqual(two.json, {
        requests: ["one", "two"].map((text) => ({
          model: "models/gemini-embedding-001",
          content: { parts: [{ text }] },
        })),
      });
    });

    await t.step("batches above a wire's maximum are split, order kept, usage summed", async () => {
      const cases: [string, number, number[]][] = [
        ["gemini-emb", 250, [100, 100, 50]],
        ["vertex-predict", 260, [250, 10]],
        ["bedrock-cohere-v3", 100, [96, 4]],
        ["openai-emb", 2049, [2048, 1]],
      ];
      for (const [model, n, sizes] of cases) {
        const w = wire(model);
        const mock = mockOf(h, w);
        const at = embeddingCalls(mock).length;
        const inputs = texts(n, model);
        const { json } = await embedded(h, { model, input: inputs }, w.native);
        const calls = embeddingCalls(mock).slice(at);
        const carried = calls.map((c) =>
          (c.json.requests ?? c.json.instances ?? c.json.texts ?? c.json.input).length
        );
        // Calls run side by side: they may arrive in any order.
        assert.deepEqual(carried.sort((a, b) => b - a), sizes, `${model}: inputs per call`);
        // Gemini counts nothing: the gateway's estimate (4 characters a token) stands in.
        const tokens = model === "gemini-emb"
          ? inputs.reduce((s, i) => s + Math.ceil(i.length / 4), 0)
          : inputs.reduce((s, i) => s + mockTokens(i), 0);
        assert.deepEqual(json.usage, { prompt_tokens: tokens, total_tokens: tokens }, model);
        assert.equal(h.logs.at(-1)!.usage_estimated, model === "gemini-emb" || undefined, model);
      }
      // Split, the OpenAI wire is converted: base64 asked upstream, floats answered.
      const split = embeddingCalls(h.vendor).at(-1)!;
      assert.equal(split.json.encoding_format, "base64");
    });

    await t.step("Vertex: gemini-embedding-001 takes one instance a call", async () => {
      const at = embeddingCalls(h.vertex).length;
      await embedded(h, { model: "vertex-gemini-001", input: texts(3) }, GEMINI_DIMENSIONS);
      const calls = embeddingCalls(h.vertex).slice(at);
      assert.deepEqual(calls.map((c) => c.json.instances.length), [1, 1, 1]);
      assert.ok(calls.every((c) => c.path.endsWith("/gemini-embedding-001:predict")));
    });

    await t.step("calls that finish out of order answer in input order", async () => {
      // The first input's call is held: every other one finishes before it.
      const inputs = ["#slow first", ...texts(5)];
      await embedded(h, { model: "bedrock-titan", input: inputs, dimensions: 512 }, 512);
      const cohere = ["#slow", ...texts(96 * 2)];
      await embedded(h, { model: "bedrock-cohere-v4", input: cohere, dimensions: 256 }, 256);
    });

    await t.step("a one-input wire fans out at most CONCURRENT_CALLS at a time", async () => {
      CALLS.max = 0;
      const inputs = texts(CONCURRENT_CALLS * 3, "#slow");
      await embedded(h, { model: "bedrock-titan", input: inputs, dimensions: 256 }, 256);
      assert.equal(CALLS.max, CONCURRENT_CALLS);
    });
  } finally {
    await h.close();
  }
});

Deno.test("embeddings: what a target cannot take is a 400 before any upstream call", async (t) => {
  const h = await startEmbeddingsGateway({
    routes: [
      { models: ["mixed"], targets: [{ provider: "anthropic" }, { provider: "gemini" }] },
      { models: ["bedrock-claude"], provider: "bedrock", model: "anthropic.claude-v2" },
      { models: ["gem*"], provider: "gemini" },
      {
        models: ["ids-anywhere"],
        targets: [
          { provider: "gemini", model: "gemini-embedding-001" },
          { provider: "openai", model: "text-embedding-3-small" },
        ],
      },
    ],
  });
  const calls = () => [h.vendor, h.azure, h.vertex, h.bedrock].map((m) => m.requests.length);
  const refused = async (body: Record<string, unknown>, param: string, message: RegExp) => {
    const before = calls();
    const res = await embed(h, body);
    const json = await res.json();
    assert.equal(res.status, 400, JSON.stringify(json));
    assert.equal(json.error.type, "invalid_request_error");
    assert.equal(json.error.param, param, JSON.stringify(body));
    assert.match(json.error.message, message);
    assert.deepEqual(calls(), before, "no upstream call");
  };
  try {
    await t.step("Anthropic's API has no embeddings endpoint", async () => {
      await refused(
        { model: "claude-emb", input: "hi" },
        "model",
        /^provider anthropic \(api messages\) has no embeddings endpoint$/,
      );
    });
    await t.step("a route with another target skips it", async () => {
      await embedded(h, { model: "mixed", input: ["x", "y"] }, GEMINI_DIMENSIONS, "mixed");
      assert.equal(h.logs.at(-1)!.provider, "gemini");
    });
    await t.step("token ids go only to the wires that take them", async () => {
      for (const model of ["gemini-emb", "vertex-predict", "bedrock-titan", "bedrock-cohere-v4"]) {
        await refused({ model, input: [[1, 2, 3]] }, "input", /^input: token ids cannot be sent/);
      }
      await embedded(h, { model: "openai-emb", input: [[1, 2, 3], [4]] }, 12);
      await embedded(h, { model: "azure-emb", input: [5, 6] }, 12);
      // Failover moves past a target that cannot take them.
      await embedded(h, { model: "ids-anywhere", input: [7, 8, 9] }, 12, "text-embedding-3-small");
      assert.equal(h.logs.at(-1)!.provider, "openai");
    });
    await t.step("a size the model cannot make names dimensions", async () => {
      await refused(
        { model: "bedrock-cohere-v3", input: "hi", dimensions: 256 },
        "dimensions",
        /^dimensions: cohere\.embed-english-v3 makes vectors of 1024 only, not 256$/,
      );
      await refused(
        { model: "bedrock-titan", input: "hi", dimensions: 300 },
        "dimensions",
        /makes vectors of 256, 512, 1024, not 300$/,
      );
      await refused(
        { model: "bedrock-cohere-v4", input: "hi", dimensions: 100 },
        "dimensions",
        /256, 512, 1024, 1536/,
      );
    });
    await t.step(
      "a model name its provider's URL cannot carry is refused, no attempt counted",
      async () => {
        await refused(
          { model: "gemx/../../v1beta/files?", input: ["a", "b"] },
          "model",
          /cannot be sent in the upstream URL/,
        );
        const res = await embed(h, { model: "gem:countTokens", input: "a" });
        assert.equal(res.status, 400);
        assert.equal(res.headers.get("x-gateway-attempts"), "0");
        await res.body?.cancel();
      },
    );
    await t.step("a Bedrock model that does not embed is named", async () => {
      await refused(
        { model: "bedrock-claude", input: "hi" },
        "model",
        /"anthropic\.claude-v2" is no embeddings model on Bedrock/,
      );
    });
    await t.step("the client's own mistakes, in OpenAI's envelope", async () => {
      const bad: [Record<string, unknown>, string, RegExp][] = [
        [{ input: "hi" }, "model", /^model: required/],
        [{ model: "openai-emb" }, "input", /^input: /],
        [{ model: "openai-emb", input: [] }, "input", /^input: expected at least one input$/],
        [{ model: "openai-emb", input: ["a", ""] }, "input", /^input\[1\]: must not be empty$/],
        [{ model: "openai-emb", input: ["a", 1] }, "input[1]", /^input\[1\]: expected string/],
        [{ model: "openai-emb", input: [-1] }, "input[0]", /^input\[0\]: /],
        [{ model: "openai-emb", input: "a", encoding_format: "hex" }, "encoding_format", /float/],
        [{ model: "openai-emb", input: "a", dimensions: 0 }, "dimensions", /^dimensions: /],
        [{ model: "openai-emb", input: "a", dimensions: 1.5 }, "dimensions", /^dimensions: /],
      ];
      for (const [body, param, message] of bad) await refused(body, param, message);
    });
  } finally {
    await h.close();
  }
});

Deno.test("embeddings: one failed call fails the request with the provider's error", async () => {
  const h = await startEmbeddingsGateway();
  try {
    const inputs = texts(250);
    inputs[180] = "this one fails #err429";
    const res = await embed(h, { model: "gemini-emb", input: inputs });
    const json = await res.json();
    assert.equal(res.status, 429);
    assert.equal(json.error.type, "rate_limit_error");
    assert.match(json.error.message, /RESOURCE_EXHAUSTED|quota|rate/i);
    // The Titan fan-out: the failing input's call is Bedrock's throttling.
    const titan = texts(12);
    titan[5] = "#err429";
    const fanned = await embed(h, { model: "bedrock-titan", input: titan });
    const error = (await fanned.json()).error;
    assert.equal(fanned.status, 429);
    assert.match(error.message, /^ThrottlingException: /);
    // A relayed call's error is the provider's own JSON.
    const relayed = await embed(h, { model: "openai-emb", input: ["#err400"] });
    assert.equal(relayed.status, 400);
    assert.equal((await relayed.json()).error.code, "context_length_exceeded");
  } finally {
    await h.close();
  }
});

Deno.test("embeddings: the first failed call stops the fan-out: no call starts after it", async () => {
  const h = await startEmbeddingsGateway();
  try {
    // 64 calls held 300 ms each, 8 at a time; the first fails at once (Bedrock's 400).
    const inputs = ["#err400", ...texts(63, "#slow300")];
    const before = embeddingCalls(h.bedrock).length;
    const res = await embed(h, { model: "bedrock-titan", input: inputs });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error.message, /^ValidationException: /);
    await new Promise((r) => setTimeout(r, 700));
    const sent = embeddingCalls(h.bedrock).length - before;
    assert.ok(sent <= CONCURRENT_CALLS, `${sent} calls`);
  } finally {
    await h.close();
  }
});

Deno.test("embeddings: the Gemini endpoints keep answering `unsupported vendor2 action`", async () => {
  const h = await startEmbeddingsGateway();
  try {
    for (const action of ["embedContent", "batchEmbedContents", "countTokens"]) {
      const res = await post(
        `${h.url}/v1beta/models/gemini-emb:${action}`,
        { "x-goog-api-key": KEY, "content-type": "application/json" },
        { content: { parts: [{ text: "hi" }] } },
      );
      assert.equal(res.status, 400);
      assert.equal(
        await res.text(),
        '{"error":{"code":400,"message":"unsupported vendor2 action","status":"INVALID_ARGUMENT"}}',
      );
    }
    assert.deepEqual(embeddingCalls(h.vendor), []);
  } finally {
    await h.close();
  }
});

Deno.test("embeddings: counted like generation — limits, spend, metrics, access log", async () => {
  const h = await startEmbeddingsGateway({
    tweak: (doc) => {
      doc.keys = [{ name: "team-a", key: KEY, limits: { tokens_per_minute: 40 } }];
      // An embeddings model's price needs no `output`.
      doc.prices = [{ models: ["text-embedding-3-*"], input: 20 }];
    },
  });
  try {
    const inputs = ["x".repeat(40), "y".repeat(80)]; // 10 + 20 tokens as the mock counts
    const first = await embed(h, { model: "openai-emb", input: inputs });
    assert.equal(first.status, 200);
    assert.equal(first.headers.get("x-ratelimit-remaining-tokens"), "10");
    await first.body?.cancel();
    const line = h.logs.at(-1)!;
    assert.equal(line.endpoint, "embeddings");
    assert.equal(line.operation, "embeddings");
    assert.equal(line.input_tokens, 30);
    assert.equal(line.output_tokens, 0);
    // Converted to Vertex, its own counts (statistics.token_count, summed).
    const second = await embed(h, { model: "vertex-predict", input: inputs });
    assert.equal(second.status, 200);
    await second.body?.cancel();
    assert.equal(h.logs.at(-1)!.input_tokens, 30);
    const refused = await embed(h, { model: "openai-emb", input: "z" });
    assert.equal(refused.status, 429);
    assert.match((await refused.json()).error.message, /tokens_per_minute/);
    const metrics = h.gw.metrics.expose();
    const series = (name: string) => metrics.split("\n").filter((l) => l.startsWith(name));
    const usage = series("gen_ai_client_token_usage_sum");
    assert.ok(
      usage.some((l) =>
        l.includes('gen_ai_operation_name="embeddings"') && l.includes('gen_ai_token_type="input"')
      ),
      usage.join("\n"),
    );
    assert.ok(!usage.some((l) => l.includes('gen_ai_token_type="output"')), "no output tokens");
    assert.ok(
      series("gen_ai_client_operation_duration_seconds_count").some((l) =>
        l.includes('gen_ai_operation_name="embeddings"') &&
        l.includes('gen_ai_provider_name="gcp.vertex_ai"')
      ),
    );
    // 30 tokens at $20 per million on text-embedding-3-small; Vertex's model has no price.
    const spend = series("gateway_spend_usd_total");
    assert.deepEqual(spend, [
      'gateway_spend_usd_total{key="team-a",provider="openai",model="text-embedding-3-small"} 0.0006',
    ]);
  } finally {
    await h.close();
  }
});

Deno.test("embeddings: the demo provider answers locally, the same vectors every time", async () => {
  const h = await startEmbeddingsGateway();
  try {
    const body = { model: "demo-1", input: ["hi", "there"], dimensions: 5 };
    const a = await (await embed(h, body)).json();
    const b = await (await embed(h, { ...body, encoding_format: "base64" })).json();
    assert.deepEqual(vectorsOf(a), vectorsOf(b));
    assert.equal(vectorsOf(a)[0].length, 5);
    assert.notDeepEqual(vectorsOf(a)[0], vectorsOf(a)[1]);
    assert.equal(h.logs.at(-1)!.provider, "demo");
  } finally {
    await h.close();
  }
});
