/**
 * `platform: gcp-vertex` through the gateway, against the Vertex mock (its token endpoint checks
 * the service account's RS256 JWT; its model endpoints take only live tokens it issued, and
 * Claude bodies as Vertex does): a Gemini client on a Vertex Gemini route and an Anthropic
 * client on a Vertex Claude route are relays, other clients are converted; access tokens are
 * minted once per expiry however many requests want one, scrubbed when echoed, and refreshed
 * once on a 401; a conversation carrying Anthropic thinking signatures fails over from
 * Anthropic to Vertex Claude.
 */
import assert from "node:assert/strict";
import { ConfigError } from "../src/config/config.ts";
import { Reloader } from "../src/reload.ts";
import { VERTEX_CLAUDE } from "../plugins/platforms/vertex_wire.ts";

const VERTEX_ANTHROPIC_VERSION = VERTEX_CLAUDE.version;
import {
  anthropicHeaders,
  bodies,
  googleHeaders,
  KEY,
  openaiHeaders,
  post,
  THINKING_SIGNATURE,
  wsExchange,
} from "./helpers.ts";
import { type MockVertex, startMockVertex } from "./mock/vertex.ts";
import { platformConfig } from "./platform_harness.ts";
import {
  CLAUDE_AT,
  GEMINI_AT,
  modelCalls,
  onVertex,
  PROJECT,
  startVertexGateway,
} from "./vertex_harness.ts";

/** The last model call: its path and query, its bearer token, its body. */
function lastCall(vertex: MockVertex) {
  const sent = modelCalls(vertex).at(-1)!;
  return {
    target: sent.path + sent.search,
    token: sent.headers.authorization?.replace(/^Bearer /, ""),
    json: sent.json as Record<string, unknown>,
    headers: sent.headers,
  };
}

async function ok(res: Response): Promise<string> {
  const text = await res.text();
  assert.equal(res.status, 200, text.slice(0, 500));
  return text;
}

/** The text of an SSE stream's `data:` records joined (enough to find the words in it). */
const sseData = (text: string) =>
  text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");

Deno.test("vertex gateway: a Gemini client on a Vertex Gemini route is relayed, JSON, SSE and JSON array, with a minted token", async () => {
  const h = await startVertexGateway();
  try {
    const json = await ok(
      await post(
        `${h.url}/v1beta/models/vg-text:generateContent`,
        googleHeaders(),
        bodies.gemini(),
      ),
    );
    assert.match(JSON.parse(json).candidates[0].content.parts[0].text, /hi there/);
    let sent = lastCall(h.vertex);
    assert.equal(sent.target, `${GEMINI_AT}/vg-text:generateContent`);
    assert.match(sent.token!, /^ya29\.mock-/);
    // Neither the client's key nor Google's key header goes to Vertex; the body is the client's.
    assert.ok(!JSON.stringify(sent.headers).includes(KEY));
    assert.equal(sent.headers["x-goog-api-key"], undefined);
    assert.deepEqual(sent.json, bodies.gemini());

    const sse = await ok(
      await post(
        `${h.url}/v1beta/models/vg-text:streamGenerateContent?alt=sse`,
        googleHeaders(),
        bodies.gemini(),
      ),
    );
    assert.match(sseData(sse), /hi there/);
    sent = lastCall(h.vertex);
    assert.equal(sent.target, `${GEMINI_AT}/vg-text:streamGenerateContent?alt=sse`);
    // Without alt=sse, Google's JSON-array stream, from Vertex as from Gemini.
    const array = await ok(
      await post(
        `${h.url}/v1beta/models/vg-text:streamGenerateContent`,
        googleHeaders(),
        bodies.gemini(),
      ),
    );
    assert.ok(JSON.parse(array).length >= 2);
    assert.equal(lastCall(h.vertex).target, `${GEMINI_AT}/vg-text:streamGenerateContent`);
    assert.equal(h.vertex.tokensIssued(), 1);
    const lines = h.logs.filter((l) => l.provider === "vertex-gemini");
    assert.deepEqual(lines.map((l) => l.passthrough), [true, true, true]);
    // Usage watched on the relayed bytes.
    for (const line of lines) assert.ok(Number(line.input_tokens) > 0, JSON.stringify(line));
    assert.match(h.gw.metrics.expose(), /gen_ai_provider_name="gcp\.vertex_ai"/);
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: a Gemini client's body reaches Vertex Gemini byte for byte (the platform changes nothing in it)", async () => {
  const h = await startVertexGateway();
  try {
    // Spacing, key order and a number's spelling that a re-serialisation would not keep.
    const sent = '{ "generationConfig" : {"temperature":0.50, "maxOutputTokens": 1e2},\n' +
      '  "contents":[{"role":"user","parts":[{"text":"h\\u00e9 there"}]}] }';
    for (const path of ["generateContent", "streamGenerateContent?alt=sse"]) {
      await ok(await post(`${h.url}/v1beta/models/vg-text:${path}`, googleHeaders(), sent));
      assert.equal(modelCalls(h.vertex).at(-1)!.body, sent, path);
    }
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: an Anthropic client on a Vertex Claude route is relayed: rawPredict, streamRawPredict, count-tokens", async () => {
  const h = await startVertexGateway();
  try {
    const asked = bodies.messages("vc-text");
    const json = JSON.parse(
      await ok(await post(`${h.url}/v1/messages`, anthropicHeaders(), asked)),
    );
    assert.match(json.content[0].text, /hi there/);
    let sent = lastCall(h.vertex);
    assert.equal(sent.target, `${CLAUDE_AT}/vc-text:rawPredict`);
    // The client's body, with Vertex's version in place of the model (which the URL names).
    const { model: _, ...rest } = asked;
    assert.deepEqual(sent.json, { ...rest, anthropic_version: VERTEX_ANTHROPIC_VERSION });
    assert.equal(sent.headers["x-api-key"], undefined);
    assert.ok(!JSON.stringify(sent.headers).includes(KEY));

    const sse = await ok(
      await post(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("vc-think", true)),
    );
    assert.match(sse, /event: message_stop/);
    assert.match(sse, /"type":"thinking_delta"/);
    sent = lastCall(h.vertex);
    assert.equal(sent.target, `${CLAUDE_AT}/vc-think:streamRawPredict`);
    assert.equal(sent.json.stream, true);

    const counted = JSON.parse(
      await ok(
        await post(`${h.url}/v1/messages/count_tokens`, anthropicHeaders(), {
          model: "vc-text",
          messages: [{ role: "user", content: "hi there" }],
        }),
      ),
    );
    assert.ok(counted.input_tokens > 0);
    sent = lastCall(h.vertex);
    assert.equal(sent.target, `${CLAUDE_AT}/count-tokens:rawPredict`);
    assert.equal(sent.json.model, "vc-text");
    assert.equal(sent.json.anthropic_version, VERTEX_ANTHROPIC_VERSION);

    const lines = h.logs.filter((l) => l.provider === "vertex-claude");
    assert.deepEqual(lines.map((l) => l.passthrough), [true, true, true]);
    assert.ok(Number(lines[1].output_tokens) > 0, "usage read from the relayed stream");
    assert.equal(h.vertex.tokensIssued(), 1);
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: chat, Responses (HTTP and WebSocket) and the other family's clients are converted to Vertex Gemini and Vertex Claude", async (t) => {
  const h = await startVertexGateway();
  const clients = [
    { name: "chat", path: "/v1/chat/completions", body: bodies.chat },
    { name: "responses", path: "/v1/responses", body: bodies.responses },
  ];
  const routes = [
    {
      model: "vg-text",
      target: (stream: boolean) =>
        `${GEMINI_AT}/vg-text:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
    },
    {
      model: "vc-text",
      target: (stream: boolean) =>
        `${CLAUDE_AT}/vc-text:${stream ? "streamRawPredict" : "rawPredict"}`,
    },
  ];
  try {
    for (const c of clients) {
      for (const r of routes) {
        for (const stream of [false, true]) {
          await t.step(`${c.name} → ${r.model} ${stream ? "stream" : "JSON"}`, async () => {
            const text = await ok(
              await post(h.url + c.path, openaiHeaders(), c.body(r.model, stream)),
            );
            assert.match(stream ? sseData(text) : text, /hi there/);
            const sent = lastCall(h.vertex);
            assert.equal(sent.target, r.target(stream));
            if (r.model.startsWith("vc")) {
              assert.equal(sent.json.anthropic_version, VERTEX_ANTHROPIC_VERSION);
              assert.ok(!("model" in sent.json));
            }
            assert.equal(h.logs.at(-1)!.passthrough, false);
          });
        }
      }
    }
    await t.step("messages → vg-text and Gemini → vc-text (each the other's format)", async () => {
      const viaGemini = await post(
        `${h.url}/v1/messages`,
        anthropicHeaders(),
        bodies.messages("vg-text"),
      );
      assert.match(JSON.parse(await ok(viaGemini)).content[0].text, /hi there/);
      assert.equal(lastCall(h.vertex).target, routes[0].target(false));
      const viaClaude = await post(
        `${h.url}/v1beta/models/vc-text:generateContent`,
        googleHeaders(),
        bodies.gemini(),
      );
      const answer = JSON.parse(await ok(viaClaude));
      assert.match(answer.candidates[0].content.parts[0].text, /hi there/);
      assert.equal(lastCall(h.vertex).target, routes[1].target(false));
      assert.equal(lastCall(h.vertex).json.anthropic_version, VERTEX_ANTHROPIC_VERSION);
    });
    await t.step("a chat tool loop on each: the call goes out, its result comes back", async () => {
      const tools = [{
        type: "function",
        function: {
          name: "lookup",
          parameters: { type: "object", properties: { city: { type: "string" } } },
        },
      }];
      for (const model of ["vg-tool", "vc-tool"]) {
        const ask = { model, tools, messages: [{ role: "user", content: "weather?" }] };
        const first = JSON.parse(
          await ok(await post(h.url + "/v1/chat/completions", openaiHeaders(), ask)),
        );
        const call = first.choices[0].message.tool_calls[0];
        assert.equal(call.function.name, "lookup", model);
        const result = { role: "tool", tool_call_id: call.id, content: "22C and sunny" };
        const turn = { ...ask, messages: [...ask.messages, first.choices[0].message, result] };
        const second = JSON.parse(
          await ok(await post(h.url + "/v1/chat/completions", openaiHeaders(), turn)),
        );
        assert.equal(second.choices[0].message.content, "Tool said: 22C and sunny", model);
      }
    });
    await t.step("a Responses WebSocket turn to each", async () => {
      for (const r of routes) {
        const [events] = await wsExchange(h.url, [
          { type: "response.create", model: r.model, input: "hi there" },
        ]);
        assert.equal(events.at(-1)!.type, "response.completed", JSON.stringify(events.at(-1)));
        assert.equal(lastCall(h.vertex).target, r.target(true));
      }
    });
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: 50 concurrent requests across each token expiry: one refresh per expiry, none fails", async () => {
  // 4 s tokens: refreshed behind the callers from 3 s on, waited for from 3.5 s on.
  const h = await startVertexGateway({ expiresIn: 4 });
  const wave = async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      post(
        `${h.url}/v1beta/models/vg-text:${
          i % 2 ? "streamGenerateContent?alt=sse" : "generateContent"
        }`,
        googleHeaders(),
        bodies.gemini(),
      ).then(async (res) => [res.status, await res.text()] as const)));
    for (const [status, text] of answers) assert.equal(status, 200, text.slice(0, 300));
  };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    await wave();
    assert.equal(h.vertex.tokensIssued(), 1, "50 first callers share one token");
    await wave();
    assert.equal(h.vertex.tokensIssued(), 1, "a live token is reused");
    // The token was minted before this: now too close to expiry to start a call on (or past
    // it), every caller waits for the same one refresh.
    await sleep(3600);
    await wave();
    assert.equal(h.vertex.tokensIssued(), 2);
    // Expired: again one refresh for all.
    await sleep(4100);
    await wave();
    assert.equal(h.vertex.tokensIssued(), 3);
    // Every token minted was used: no refresh went to waste.
    const used = new Set(modelCalls(h.vertex).map((r) => r.headers.authorization));
    assert.equal(used.size, 3);
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: a minted token Vertex echoes is scrubbed, in a success and in an error", async () => {
  const h = await startVertexGateway();
  try {
    const answers = [
      await post(
        `${h.url}/v1beta/models/vg-echo:generateContent`,
        googleHeaders(),
        bodies.gemini(),
      ),
      await post(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("vc-echo")),
      await post(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("vc-err400-echo")),
      await post(h.url + "/v1/chat/completions", openaiHeaders(), bodies.chat("vg-err500-echo")),
      // The stream's error event quotes it whole (its text deltas split it, which whole-event
      // scrubbing cannot see: docs/security-and-faults.md).
      await post(
        `${h.url}/v1/messages`,
        anthropicHeaders(),
        bodies.messages("vc-errevent-echo", true),
      ),
    ];
    // One token per provider (each has its own token source).
    const tokens = [...new Set(modelCalls(h.vertex).map((r) => r.headers.authorization))]
      .map((bearer) => bearer.replace(/^Bearer /, ""));
    assert.equal(tokens.length, 2);
    const leaked = (text: string) => tokens.find((t) => text.includes(t));
    for (const res of answers) {
      const text = await res.text();
      assert.ok(text.includes("[redacted]"), text.slice(0, 300));
      assert.equal(leaked(text), undefined, text.slice(0, 300));
    }
    assert.equal(leaked(JSON.stringify(h.logs)), undefined);
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: a 401 from Vertex refreshes the token once and retries; a second 401 is not retried", async () => {
  const h = await startVertexGateway();
  const ask = () => post(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("vc-text"));
  try {
    await ok(await ask());
    h.vertex.revokeTokens();
    const before = modelCalls(h.vertex).length;
    // Ten requests find the token revoked: one new token serves them all.
    const again = await Promise.all(Array.from({ length: 10 }, ask));
    for (const res of again) await ok(res);
    assert.equal(h.vertex.tokensIssued(), 2);
    assert.equal(modelCalls(h.vertex).length, before + 20, "each call sent twice, no more");

    h.vertex.refuseTokens = true;
    const calls = modelCalls(h.vertex).length;
    const refused = await ask();
    const body = await refused.json();
    assert.equal(refused.status, 502, JSON.stringify(body));
    assert.match(body.error.message, /vertex-claude/);
    assert.equal(modelCalls(h.vertex).length, calls + 2, "one retry with a fresh token");
    assert.equal(h.vertex.tokensIssued(), 3);
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: a conversation with Anthropic thinking signatures fails over from Anthropic to Vertex Claude", async () => {
  const h = await startVertexGateway();
  const signed = bodies.signedMessages("fo-sig");
  try {
    const res = await post(`${h.url}/v1/messages`, anthropicHeaders(), signed);
    await ok(res);
    assert.equal(res.headers.get("x-gateway-provider"), "vertex-claude");
    // Anthropic was tried; Vertex Gemini, another family, was skipped.
    assert.equal(res.headers.get("x-gateway-attempts"), "2");
    assert.equal(h.direct.requests.length, 1);
    assert.equal(modelCalls(h.vertex).length, 1);
    const sent = lastCall(h.vertex);
    assert.equal(sent.target, `${CLAUDE_AT}/claude-text@20250929:rawPredict`);
    const thinking = (sent.json.messages as { content: unknown }[])[1].content as {
      signature?: string;
    }[];
    assert.equal(thinking[0].signature, THINKING_SIGNATURE);
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: the model lists do not ask Vertex for the Gemini API's list", async () => {
  const h = await startVertexGateway();
  try {
    await h.gw.providerModels.refresh();
    assert.deepEqual(h.vertex.requests.map((r) => `${r.method} ${r.path}`), []);
    assert.equal(h.gw.providerModels.ids(h.gw.config.providers[0]), undefined);
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: a bad gcp block, key file or model name is a config error at its path", async () => {
  const mock = await startMockVertex();
  await mock.close();
  const credentials = await Deno.makeTempFile({ suffix: ".json" });
  const errors = (provider: Record<string, unknown>, model?: string) => {
    try {
      platformConfig({ providers: [provider], routes: [{ models: ["*"], provider: "v", model }] });
      return "";
    } catch (e) {
      if (e instanceof ConfigError) return e.message;
      throw e;
    }
  };
  const good = onVertex("v", "messages", "us-east5", credentials);
  try {
    await Deno.writeTextFile(credentials, JSON.stringify(mock.serviceAccount));
    // No base_url needed: the location names the host.
    assert.equal(errors(good), "");
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { gcp: { ...good.gcp, location: "us-east5.evil.example" } },
        /providers\[0\]\.gcp\.location: expected a GCP location/,
      ],
      [
        { gcp: { ...good.gcp, credentials_file: `${credentials}.gone` } },
        /providers\[0\]\.gcp\.credentials_file: cannot read the file \(NotFound\)/,
      ],
      [
        { gcp: { project: PROJECT, location: "global" } },
        /providers\[0\]\.gcp\.credentials_file: /,
      ],
      [
        { api: "chat" },
        /providers\[0\]\.api: platform gcp-vertex carries api generate-content, messages/,
      ],
    ];
    for (const [change, message] of cases) assert.match(errors({ ...good, ...change }), message);
    assert.match(errors(good, "claude/../x"), /routes\[0\]\.model: .*slash/);
    await Deno.writeTextFile(
      credentials,
      JSON.stringify({ ...mock.serviceAccount, client_email: 7 }),
    );
    const message = errors(good);
    assert.match(message, /providers\[0\]\.gcp\.credentials_file: the file has no client_email/);
    assert.ok(!message.includes("PRIVATE KEY"));
  } finally {
    await Deno.remove(credentials);
  }
});

Deno.test("vertex gateway: a token endpoint that refuses the service account is a 502 naming the provider and Google's reason", async () => {
  const other = await startMockVertex();
  await other.close();
  // Another account's key in the file: the token endpoint answers "Invalid JWT Signature."
  const h = await startVertexGateway({ privateKey: other.serviceAccount.private_key });
  try {
    const res = await post(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("vc-text"));
    const body = await res.json();
    assert.equal(res.status, 502, JSON.stringify(body));
    assert.equal(body.type, "error");
    assert.match(body.error.message, /vertex-claude/);
    assert.equal(
      body.error.message,
      "upstream vertex-claude: no credential to call it with: token endpoint answered 400: Invalid JWT Signature.",
    );
    assert.ok(!JSON.stringify(body).includes("PRIVATE KEY"));
    assert.equal(h.vertex.tokensIssued(), 0);
    assert.equal(modelCalls(h.vertex).length, 0);
  } finally {
    await h.close();
  }
});

Deno.test("vertex gateway: a reload re-reads the service-account file (a key rotated, or broken)", async () => {
  const h = await startVertexGateway();
  const other = await startMockVertex();
  await other.close();
  const ask = () => post(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("vc-text"));
  const reload = () => new Reloader(h.gw, h.config).reload("test").outcome;
  try {
    await ok(await ask());
    const good = await Deno.readTextFile(h.credentials);
    const broken = { ...JSON.parse(good), private_key: other.serviceAccount.private_key };
    await Deno.writeTextFile(h.credentials, JSON.stringify(broken));
    assert.equal(reload(), "applied");
    // The new key signs the next token: Google refuses it.
    const refused = await ask();
    assert.equal(refused.status, 502);
    assert.match((await refused.json()).error.message, /Invalid JWT Signature/);
    await Deno.writeTextFile(h.credentials, good);
    assert.equal(reload(), "applied");
    await ok(await ask());
    assert.equal(h.vertex.tokensIssued(), 2);
  } finally {
    await h.close();
  }
});
