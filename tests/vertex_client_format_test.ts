/**
 * Vertex AI as a client format over HTTP (plugins/vertex/): where the key may be, Vertex's
 * paths and actions, Claude's body on Vertex read as the Messages body (the version and model
 * moved where the Messages API has them), errors in Google's envelope, cut streams ended in the
 * wire's own way, failover across families, and the relay to a Vertex provider that sends the
 * client's body as it came.
 */
import assert from "node:assert/strict";
import { bodies, KEY, post, startHarness, vertexHeaders, vertexModels } from "./helpers.ts";
import { CLAUDE_AT, modelCalls, startVertexGateway } from "./vertex_harness.ts";

const CLAUDE = vertexModels("anthropic");
const GEMINI = vertexModels("google", "us-central1", "v1beta1");

/** A Google error envelope: its status code, gRPC status and message. */
async function googleError(res: Response, status: number, grpc: string): Promise<string> {
  const body = await res.json();
  assert.equal(res.status, status, JSON.stringify(body));
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.equal(body.error.code, status);
  assert.equal(body.error.status, grpc);
  return body.error.message;
}

Deno.test("vertex client format: the key is the access token; a missing or wrong one is a 401 in Google's envelope, no provider call", async () => {
  const h = await startHarness();
  try {
    const url = `${h.url}${CLAUDE}msg-text:rawPredict`;
    const body = bodies.vertexClaude("msg-text");
    const json = { "content-type": "application/json" };
    assert.match(
      await googleError(await post(url, json, body), 401, "UNAUTHENTICATED"),
      /Authorization: Bearer <key>/,
    );
    await googleError(await post(url, vertexHeaders("wrong"), body), 401, "UNAUTHENTICATED");
    await googleError(
      await post(
        `${h.url}${GEMINI}gem-text:generateContent`,
        vertexHeaders("wrong"),
        bodies.gemini(),
      ),
      401,
      "UNAUTHENTICATED",
    );
    // A key in the URL is refused, not read.
    assert.match(
      await googleError(await post(`${url}?key=${KEY}`, json, body), 400, "INVALID_ARGUMENT"),
      /\?key= query parameter are not accepted/,
    );
    assert.equal(h.upstream.requests.length, 0);
    // genai's express mode: no project or location, the key in x-goog-api-key.
    const express = await post(
      `${h.url}/v1beta1/publishers/google/models/gem-text:generateContent`,
      { "x-goog-api-key": KEY, ...json },
      bodies.gemini(),
    );
    assert.equal(express.status, 200, await express.clone().text());
    assert.match((await express.json()).candidates[0].content.parts[0].text, /hi there/);
  } finally {
    await h.close();
  }
});

Deno.test("vertex client format: actions and models Vertex paths may name; the Gemini API's fixed text stays", async () => {
  const h = await startHarness();
  try {
    const bad: [string, unknown, number, string, RegExp][] = [
      [
        `${CLAUDE}msg-text:predict`,
        bodies.vertexClaude("msg-text"),
        400,
        "INVALID_ARGUMENT",
        /^unsupported Vertex AI action "predict" on publishers\/anthropic models: this gateway serves :rawPredict and :streamRawPredict$/,
      ],
      [
        `${GEMINI}gem-text:countTokens`,
        bodies.gemini(),
        400,
        "INVALID_ARGUMENT",
        /^unsupported Vertex AI action "countTokens" on publishers\/google models: this gateway serves :generateContent and :streamGenerateContent$/,
      ],
      [`${GEMINI}gem-text`, bodies.gemini(), 400, "INVALID_ARGUMENT", /action ""/],
      [
        `${GEMINI}gem%2Ftext:generateContent`,
        bodies.gemini(),
        400,
        "INVALID_ARGUMENT",
        /^invalid model "gem\/text" in the path/,
      ],
      [
        `${vertexModels("meta")}llama:rawPredict`,
        bodies.gemini(),
        404,
        "NOT_FOUND",
        /no such endpoint/,
      ],
    ];
    for (const [path, body, status, grpc, message] of bad) {
      const got = await googleError(await post(h.url + path, vertexHeaders(), body), status, grpc);
      assert.match(got, message, path);
    }
    // Vertex's model reads are not served: the list is no endpoint, a model's path takes POST.
    const read = (path: string) => fetch(h.url + path, { headers: vertexHeaders() });
    await googleError(await read("/v1beta1/publishers/google/models"), 404, "NOT_FOUND");
    assert.match(
      await googleError(await read(`${GEMINI}gem-text`), 405, "INVALID_ARGUMENT"),
      /^method GET is not allowed on .* \(use POST\)$/,
    );
    // The Gemini API's own paths keep their fixed text, byte for byte.
    const gemini = await post(
      `${h.url}/v1beta/models/gem-text:countTokens`,
      { "x-goog-api-key": KEY, "content-type": "application/json" },
      bodies.gemini(),
    );
    assert.equal(await googleError(gemini, 400, "INVALID_ARGUMENT"), "unsupported vendor2 action");
    assert.equal(h.upstream.requests.length, 0);
  } finally {
    await h.close();
  }
});

Deno.test("vertex client format: Claude's body on Vertex is read as the Messages body; its mistakes are 400s naming the field", async () => {
  const h = await startHarness();
  try {
    const url = (model: string, action = "rawPredict") => `${h.url}${CLAUDE}${model}:${action}`;
    const base = bodies.vertexClaude("msg-text");
    const { anthropic_version: _, ...noVersion } = base;
    const bad: [unknown, RegExp][] = [
      [noVersion, /^anthropic_version: required \(vertex-2023-10-16, or an API version date/],
      [{ ...base, anthropic_version: "bedrock-2023-05-31" }, /is neither vertex-2023-10-16 nor/],
      [{ ...base, model: "msg-other" }, /^model: "msg-other" differs from the model the path/],
      [{ ...base, max_tokens: "lots" }, /max_tokens/],
      ["{not json", /not valid JSON/],
    ];
    for (const [body, message] of bad) {
      const res = await post(url("msg-text"), vertexHeaders(), body);
      assert.match(await googleError(res, 400, "INVALID_ARGUMENT"), message);
    }
    assert.equal(h.upstream.requests.length, 0);

    // As Claude Code sends it: Vertex's version in the body, the API version and betas as headers.
    const headers = {
      ...vertexHeaders(),
      "anthropic-version": "2023-06-01",
      "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
    };
    const res = await post(url("msg-text", "streamRawPredict"), headers, { ...base, stream: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
    assert.match(await res.text(), /event: message_stop/);
    const sent = h.upstream.requests.at(-1)!;
    assert.equal(sent.path, "/v1/messages");
    const { anthropic_version: __, ...messagesBody } = base;
    assert.deepEqual(sent.json, { model: "msg-text", ...messagesBody, stream: true });
    assert.equal(sent.headers["anthropic-version"], "2023-06-01");
    assert.equal(sent.headers["anthropic-beta"], headers["anthropic-beta"]);
    assert.equal(sent.headers.authorization, undefined, "the client's token stays here");
    // The body's `stream` decides, as Vertex's model server reads it.
    const json = await post(url("msg-text", "streamRawPredict"), headers, base);
    assert.equal((await json.json()).type, "message");
    const line = h.logs.findLast((l) => l.endpoint === "vertex_raw_predict")!;
    assert.equal(line.passthrough, true);
  } finally {
    await h.close();
  }
});

Deno.test("vertex client format: a cut stream ends as each wire's SDKs read it; failover crosses families", async () => {
  const h = await startHarness({
    extraRoutes: [{
      models: ["fo-vertex"],
      passthrough: false,
      targets: [
        { provider: "anthropic", model: "msg-err529", weight: 1 },
        { provider: "gemini", model: "gem-text", weight: 1 },
      ],
    }],
  });
  try {
    const claude = await post(
      `${h.url}${CLAUDE}chat-cut:streamRawPredict`,
      vertexHeaders(),
      bodies.vertexClaude("chat-cut", true),
    );
    const claudeText = await claude.text();
    assert.match(claudeText, /event: error\ndata: \{"type":"upstream_interrupted"/);
    const gemini = await post(
      `${h.url}${GEMINI}msg-cut:streamGenerateContent?alt=sse`,
      vertexHeaders(),
      bodies.gemini(),
    );
    const geminiText = await gemini.text();
    assert.match(geminiText, /data: \{"type":"upstream_interrupted","error":\{[^\n]*"code":502/);
    assert.doesNotMatch(geminiText, /event: error/);
    // Both counted in Vertex's dialect (the endpoint's, not the first format's on these paths).
    const cuts = h.gw.metrics.expose().match(/^gateway_stream_interruptions_total\{.*$/gm);
    assert.deepEqual(cuts, [
      'gateway_stream_interruptions_total{provider="oai-chat",dialect="vertex"} 1',
      'gateway_stream_interruptions_total{provider="anthropic",dialect="vertex"} 1',
    ]);

    const res = await post(`${h.url}${CLAUDE}fo-vertex:rawPredict`, vertexHeaders(), {
      ...bodies.vertexClaude("fo-vertex"),
    });
    const answer = await res.json();
    assert.equal(res.status, 200, JSON.stringify(answer));
    assert.match(answer.content[0].text, /Hello from generate-content mock/);
    const tried = h.upstream.requests.slice(-2).map((r) => r.path);
    assert.deepEqual(tried, ["/v1/messages", "/v1beta/models/gem-text:generateContent"]);
    // A provider's own error, when every target failed: relayed as it wrote it (as Vertex does).
    const failed = await post(
      `${h.url}${CLAUDE}msg-err429:rawPredict`,
      vertexHeaders(),
      bodies.vertexClaude("msg-err429"),
    );
    assert.equal(failed.status, 429);
    assert.equal((await failed.json()).error.type, "rate_limit_error");
    assert.match(h.gw.metrics.expose(), /gen_ai_provider_name="gcp\.gemini"/);
  } finally {
    await h.close();
  }
});

Deno.test("vertex client format: Claude Code's body to a Vertex Claude provider goes as it came, with the minted token", async () => {
  const h = await startVertexGateway();
  try {
    const body = {
      anthropic_version: "vertex-2023-10-16",
      max_tokens: 32000,
      stream: true,
      system: [{ type: "text", text: "You are Claude Code." }],
      messages: [{ role: "user", content: [{ type: "text", text: "say hi" }] }],
      thinking: { type: "adaptive" },
    };
    const res = await post(`${h.url}${CLAUDE}vc-text:streamRawPredict`, {
      ...vertexHeaders(),
      "anthropic-version": "2023-06-01",
      "anthropic-beta": "claude-code-20250219",
    }, body);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /say hi/);
    const sent = modelCalls(h.vertex).at(-1)!;
    assert.equal(sent.path, `${CLAUDE_AT}/vc-text:streamRawPredict`);
    assert.deepEqual(sent.json, body);
    assert.match(sent.headers.authorization!, /^Bearer ya29\.mock-/);
    assert.equal(sent.headers["anthropic-beta"], "claude-code-20250219");
    assert.equal(sent.headers["anthropic-version"], undefined, "Vertex reads the body's");
    assert.equal(h.logs.at(-1)!.passthrough, true);
  } finally {
    await h.close();
  }
});

Deno.test("vertex client format: the identity's limits and usage count Vertex calls; a refusal is Google's 429", async () => {
  const h = await startHarness({
    tweak: (c) => void (c.keys[0] = { ...c.keys[0], limits: { requests_per_minute: 2 } }),
  });
  try {
    const claude = `${h.url}${CLAUDE}msg-text:rawPredict`;
    const gemini = `${h.url}${GEMINI}chat-text:streamGenerateContent?alt=sse`;
    const first = await post(claude, vertexHeaders(), bodies.vertexClaude("msg-text"));
    assert.equal(first.status, 200);
    await first.body?.cancel();
    const second = await post(gemini, vertexHeaders(), bodies.gemini());
    assert.equal(second.status, 200);
    await second.text();
    const calls = h.upstream.requests.filter((r) => r.method === "POST").length;
    const refused = await post(claude, vertexHeaders(), bodies.vertexClaude("msg-text"));
    assert.match(
      await googleError(refused, 429, "RESOURCE_EXHAUSTED"),
      /^team-a has reached its limit requests_per_minute \(2 requests per minute\)/,
    );
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    assert.equal(h.upstream.requests.filter((r) => r.method === "POST").length, calls);
    // Usage as the provider reported it, relayed (Anthropic's JSON) and converted (chat's stream).
    const lines = h.logs.filter((l) => l.status === 200 && String(l.path).includes("/publishers/"));
    assert.deepEqual(lines.map((l) => [l.provider, l.passthrough]), [
      ["anthropic", true],
      ["oai-chat", false],
    ]);
    for (const l of lines) {
      assert.ok(Number(l.input_tokens) > 0 && Number(l.output_tokens) > 0, JSON.stringify(l));
    }
  } finally {
    await h.close();
  }
});
