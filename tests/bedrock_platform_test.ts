/**
 * Amazon Bedrock with Anthropic's body (plugins/platforms/bedrock.ts) through the gateway
 * against the Bedrock mock (tests/mock/bedrock.ts: every call's SigV4 signature recomputed by an
 * independent verifier, or a Bedrock API key): Messages clients relayed (JSON, and event-stream
 * `chunk` frames re-framed as SSE), chat and Responses clients converted, model ids and ARNs as
 * one path segment, Bedrock's errors and in-stream exceptions as neutral kinds (throttling fails
 * over, before content), a cut stream's interruption, the session token and the key scrubbed.
 */
import assert from "node:assert/strict";
import { BEDROCK_TEST_CREDENTIALS, BILLED_EXTRA, startMockBedrock } from "./mock/bedrock.ts";
import { Anthropic, OpenAI } from "./sdk/deps.ts";
import {
  anthropicHeaders,
  bodies,
  FORMATS,
  KEY,
  openaiHeaders,
  post,
  PROVIDER_KEY,
} from "./helpers.ts";
import { startMockUpstream, TOKENS } from "./mock/upstream.ts";
import { Secrets } from "../src/ops/secrets.ts";
import { countTokensAnswer } from "../plugins/platforms/bedrock_wire.ts";
import type { GatewayError } from "../src/kit/errors.ts";
import {
  bedrockProvider,
  platformConfig,
  sseEvents,
  startPlatformGateway,
} from "./platform_harness.ts";

const BEDROCK_KEY = "ABSKbW9jay1iZWRyb2NrLWFwaS1rZXk=";
const ARN =
  "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-text-v1:0";
const { accessKeyId, secretAccessKey, sessionToken } = BEDROCK_TEST_CREDENTIALS;

function bedrockConfig(base: string) {
  const bedrock = (name: string, extra: Record<string, unknown>) => ({
    name,
    api: "messages",
    platform: "aws-bedrock",
    base_url: base,
    ...extra,
  });
  const aws = {
    region: "us-east-1",
    access_key_id: accessKeyId,
    secret_access_key: secretAccessKey,
  };
  const failover = (model: string) => ({
    models: [`fo-${model}`],
    targets: [{ provider: "bedrock", model }, { provider: "bedrock-key", model: "claude-text" }],
  });
  return platformConfig({
    providers: [
      bedrock("bedrock", { aws: { ...aws, session_token: sessionToken } }),
      bedrock("bedrock-key", { api_key: BEDROCK_KEY, aws: { region: "us-east-1" } }),
      bedrock("bedrock-nosession", { aws }),
    ],
    routes: [
      { models: ["claude-*"], provider: "bedrock" },
      { models: ["key-*"], provider: "bedrock-key" },
      { models: ["colon-*"], provider: "bedrock-key", model: "anthropic.claude-text-v1:0" },
      { models: ["nosession-*"], provider: "bedrock-nosession", model: "claude-text" },
      { models: ["arn-*"], provider: "bedrock", model: ARN },
      failover("claude-err429"),
      failover("claude-earlyerr"),
    ],
  });
}

const messages = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  post(`${url}/v1/messages`, { ...anthropicHeaders(), ...headers }, body);

Deno.test("aws-bedrock: Anthropic's body through InvokeModel, relayed and converted", async (t) => {
  const bedrock = await startMockBedrock({ apiKey: BEDROCK_KEY });
  const h = await startPlatformGateway(bedrockConfig(bedrock.url));
  const last = () => bedrock.requests.at(-1)!;

  try {
    await t.step(
      "messages, JSON: signed, Bedrock's body, relayed as Bedrock answered",
      async () => {
        const res = await messages(h.url, bodies.messages("claude-text"), {
          "anthropic-beta": "interleaved-thinking-2025-05-14, context-1m-2025-08-07",
        });
        assert.equal(res.status, 200);
        const json = await res.json();
        assert.equal(json.type, "message");
        assert.ok(json.content[0].text.length > 0);
        const sent = last();
        assert.equal(sent.path, "/model/claude-text/invoke");
        assert.match(sent.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIA/);
        assert.equal(sent.headers["x-amz-security-token"], sessionToken);
        assert.equal(sent.json?.model, undefined);
        assert.equal(sent.json?.stream, undefined);
        assert.equal(sent.json?.anthropic_version, "bedrock-2023-05-31");
        assert.deepEqual(sent.json?.anthropic_beta, [
          "interleaved-thinking-2025-05-14",
          "context-1m-2025-08-07",
        ]);
        assert.equal(sent.headers["anthropic-beta"], undefined);
        assert.ok(!JSON.stringify(sent.headers).includes(KEY));
      },
    );

    await t.step("a client's later dated anthropic-version is passed as is", async () => {
      const res = await messages(h.url, bodies.messages("claude-text"), {
        "anthropic-version": "2026-10-21",
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.equal(last().json?.anthropic_version, "2026-10-21");
    });

    await t.step(
      "messages, stream: chunk frames relayed as SSE, the events' JSON as sent",
      async () => {
        const res = await messages(h.url, bodies.messages("claude-text", true));
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
        const text = await res.text();
        assert.equal(last().path, "/model/claude-text/invoke-with-response-stream");
        const events = sseEvents(text);
        assert.deepEqual(
          [events[0].type, events.at(-1)!.type],
          ["message_start", "message_stop"],
        );
        // Bedrock's own metrics ride in the last event, relayed untouched.
        assert.ok(events.at(-1)!["amazon-bedrock-invocationMetrics"]);
        assert.match(text, /^event: message_start\ndata: \{/);
        const usage = h.logs.at(-1)!.usage as Record<string, number>;
        assert.ok(usage.outputTokens > 0, JSON.stringify(h.logs.at(-1)));
      },
    );

    await t.step("the Anthropic SDK streams through it", async () => {
      const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
      const final = await anthropic.messages.stream({
        model: "claude-think",
        max_tokens: 1000,
        thinking: { type: "enabled", budget_tokens: 500 },
        messages: [{ role: "user", content: "hi" }],
      }).finalMessage();
      const thinking = final.content.find((b) => b.type === "thinking");
      assert.ok(thinking && thinking.type === "thinking" && thinking.signature);
    });

    await t.step("chat and Responses clients are converted, JSON and stream", async () => {
      const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
      const chat = await openai.chat.completions.create({
        model: "claude-text",
        messages: [{ role: "user", content: "hi" }],
      });
      assert.ok(chat.choices[0].message.content);
      assert.equal(last().json?.anthropic_version, "bedrock-2023-05-31");
      const chatStream = await openai.chat.completions.create({
        model: "claude-text",
        messages: [{ role: "user", content: "hi" }],
        stream: true,
      });
      let text = "";
      for await (const c of chatStream) text += c.choices[0]?.delta?.content ?? "";
      assert.ok(text.length > 0);
      assert.equal(last().path, "/model/claude-text/invoke-with-response-stream");
      assert.equal(last().json?.stream, undefined);
      const resp = await openai.responses.create({ model: "claude-text", input: "hi" });
      assert.ok(resp.output_text.length > 0);
      const respStream = await openai.responses.create({
        model: "claude-text",
        input: "hi",
        stream: true,
      });
      const types: string[] = [];
      for await (const e of respStream) types.push(e.type);
      assert.equal(types.at(-1), "response.completed");
    });

    await t.step("model ids with `:` and ARNs travel as one encoded path segment", async () => {
      for (const [model, id] of [["colon-a", "anthropic.claude-text-v1:0"], ["arn-a", ARN]]) {
        const res = await messages(h.url, bodies.messages(model));
        assert.equal(res.status, 200, await res.clone().text());
        await res.body?.cancel();
        assert.equal(last().path, `/model/${encodeURIComponent(id)}/invoke`);
      }
    });

    await t.step("a Bedrock API key goes as Bearer", async () => {
      const res = await messages(h.url, bodies.messages("key-text"));
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.equal(last().headers.authorization, `Bearer ${BEDROCK_KEY}`);
    });

    await t.step(
      "without the session token the signature is refused: the credential 502",
      async () => {
        const res = await messages(h.url, bodies.messages("nosession-a"));
        assert.equal(res.status, 502);
        const json = await res.json();
        assert.equal(json.type, "error");
        assert.match(json.error.message, /provider `bedrock-nosession` rejected/);
      },
    );

    await t.step("ThrottlingException is retried on the next target", async () => {
      const res = await messages(h.url, bodies.messages("fo-claude-err429"));
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-gateway-provider"), "bedrock-key");
      assert.equal(res.headers.get("x-gateway-attempts"), "2");
      await res.body?.cancel();
    });

    await t.step("a throttlingException frame before content fails over like a 429", async () => {
      const res = await messages(h.url, bodies.messages("fo-claude-earlyerr", true));
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-gateway-provider"), "bedrock-key");
      assert.equal(sseEvents(await res.text()).at(-1)!.type, "message_stop");
    });

    await t.step("Bedrock's errors in the client's dialect, by exception name", async () => {
      const cases: [string, number, string][] = [
        ["claude-err400", 400, "invalid_request_error"],
        ["claude-err403", 502, "api_error"],
      ];
      for (const [model, status, type] of cases) {
        const res = await messages(h.url, bodies.messages(model));
        const json = await res.json();
        assert.equal(res.status, status, JSON.stringify(json));
        assert.equal(json.error.type, type, JSON.stringify(json));
        assert.equal(res.headers.get("x-gateway-attempts"), "1");
      }
      const res = await messages(h.url, bodies.messages("claude-err400"));
      assert.match((await res.json()).error.message, /^ValidationException: Malformed input/);
    });

    await t.step(
      "a cut stream, and an exception after content, end in the client's framing",
      async () => {
        for (
          const [model, why] of [["claude-cut", /closed|failed/], [
            "claude-errevent",
            /modelStreamErrorException/,
          ]] as const
        ) {
          const res = await messages(h.url, bodies.messages(model, true));
          const events = sseEvents(await res.text());
          assert.ok(events.some((e) => e.type === "content_block_delta"));
          const end = events.at(-1)!.error as Record<string, string>;
          assert.equal(end.type, "upstream_interrupted");
          assert.match(end.message, why);
        }
      },
    );

    await t.step(
      "the session token, the access key id and the key Bedrock echoes are scrubbed",
      async () => {
        for (const model of ["claude-echo", "key-echo", "claude-errevent-echo"]) {
          const stream = model.includes("errevent");
          const res = await messages(h.url, bodies.messages(model, stream));
          const text = await res.text();
          assert.ok(text.includes("[redacted]"), text);
          assert.ok(!text.includes(sessionToken) && !text.includes(BEDROCK_KEY), text);
          assert.doesNotMatch(text, /Signature=[0-9a-f]{64}/, "nor the SigV4 signature");
          // The access key id names the AWS identity: it goes no further than the key does.
          if (!model.startsWith("key")) assert.ok(!text.includes(accessKeyId), text);
        }
      },
    );

    await t.step(
      "the SigV4 signature AWS quotes back is scrubbed, as the access key id is",
      async () => {
        const chat = (model: string, stream: boolean) =>
          post(`${h.url}/v1/chat/completions`, openaiHeaders(), bodies.chat(model, stream));
        const cases = [
          [
            "relayed",
            (stream: boolean) => messages(h.url, bodies.messages("claude-sigecho", stream)),
          ],
          ["converted", (stream: boolean) => chat("claude-sigecho", stream)],
        ] as const;
        for (const [how, send] of cases) {
          for (const stream of [false, true]) {
            const res = await send(stream);
            const text = await res.text();
            const label = `${how} ${stream ? "stream" : "json"}: ${text}`;
            const sent = last().headers.authorization.match(/Signature=([0-9a-f]{64})/)![1];
            assert.equal(res.status, 400, label);
            // AWS's words reach the client, the header they quote without its secrets.
            assert.match(text, /not a valid key=value pair .*Signature=\[redacted\]/, label);
            assert.ok(!text.includes(sent) && !text.includes(accessKeyId), label);
          }
        }
        const signatures = bedrock.requests.flatMap((r) =>
          r.headers.authorization?.match(/Signature=([0-9a-f]{64})/)?.[1] ?? []
        );
        const logs = JSON.stringify(h.logs);
        assert.ok(logs.includes("[redacted]"), "the access log holds the scrubbed message");
        const leak = h.logs.find((l) => signatures.some((s) => JSON.stringify(l).includes(s)));
        assert.ok(!leak, `no signature in the access log: ${JSON.stringify(leak)}`);
      },
    );

    await t.step("metrics name the platform", () => {
      assert.match(h.gw.metrics.expose(), /gen_ai_provider_name="aws\.bedrock"/);
    });
  } finally {
    await h.close();
    await bedrock.close();
  }
});

Deno.test("aws-bedrock: the aws block is checked, base_url defaults to the region's", () => {
  const provider = (aws: unknown, extra: Record<string, unknown> = {}) => ({
    providers: [{ name: "b", api: "messages", platform: "aws-bedrock", aws, ...extra }],
    routes: [{ models: ["*"], provider: "b" }],
  });
  const config = platformConfig(provider({ region: "eu-west-3" }));
  const binding = FORMATS.platforms.bind(config.providers[0], Secrets.none);
  assert.equal(binding.provider.base_url, "https://bedrock-runtime.eu-west-3.amazonaws.com");
  // That default is https: its connections are reused, as for an https base_url.
  assert.equal(config.providers[0].keep_alive, true);
  assert.throws(
    () => platformConfig(provider({ region: "Paris" })),
    /providers\[0\]\.aws\.region: an AWS region/,
  );
  assert.throws(
    () => platformConfig(provider({ region: "us-east-1", access_key_id: "AKIA1" })),
    /providers\[0\]\.aws\.secret_access_key: give access_key_id and secret_access_key together/,
  );
  assert.throws(() => platformConfig(provider(undefined)), /providers\[0\]\.aws: /);
  assert.throws(
    () => platformConfig(provider({ region: "us-east-1" }, { api: "chat" })),
    /providers\[0\]\.api: platform aws-bedrock carries api messages/,
  );
});

Deno.test("aws-bedrock: a Claude conversation with thinking fails over from Anthropic to Bedrock", async () => {
  const bedrock = await startMockBedrock();
  const mock = await startMockUpstream();
  const direct = (name: string, api: string, base: string) => ({
    name,
    api,
    base_url: base,
    api_key: PROVIDER_KEY,
  });
  const h = await startPlatformGateway(platformConfig({
    providers: [
      direct("oai-chat", "chat", `${mock.url}/v1`),
      direct("anthropic", "messages", mock.url),
      bedrockProvider("bedrock", bedrock.url),
    ],
    routes: [
      { models: ["msg-*"], provider: "anthropic" },
      {
        models: ["claude-sig"],
        targets: [
          { provider: "oai-chat", model: "chat-think" },
          { provider: "anthropic", model: "msg-err529" },
          { provider: "bedrock", model: "claude-think" },
        ],
      },
    ],
  }));
  try {
    const first = await messages(h.url, {
      model: "msg-think",
      max_tokens: 1000,
      thinking: { type: "enabled", budget_tokens: 500 },
      messages: [{ role: "user", content: "hi" }],
    });
    const answer = await first.json();
    const thinking = answer.content.find((b: { type: string }) => b.type === "thinking");
    assert.ok(thinking?.signature);
    const res = await messages(h.url, {
      model: "claude-sig",
      max_tokens: 1000,
      thinking: { type: "enabled", budget_tokens: 500 },
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: answer.content },
        { role: "user", content: "and then?" },
      ],
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    // The chat deployment cannot read Anthropic signatures: skipped, not tried.
    assert.equal(res.headers.get("x-gateway-provider"), "bedrock");
    assert.equal(res.headers.get("x-gateway-attempts"), "2");
    assert.ok(!mock.requests.some((q) => q.path === "/v1/chat/completions"));
    const carried = bedrock.requests.at(-1)!.json?.messages as { content: unknown }[];
    assert.deepEqual(carried[1].content, answer.content);
  } finally {
    await h.close();
    await mock.close();
    await bedrock.close();
  }
});

Deno.test("aws-bedrock: Anthropic token counting goes to CountTokens, the InvokeModel body in base64", async (t) => {
  const bedrock = await startMockBedrock({ apiKey: BEDROCK_KEY });
  const h = await startPlatformGateway(bedrockConfig(bedrock.url));
  const count = (body: unknown, headers: Record<string, string> = {}) =>
    post(`${h.url}/v1/messages/count_tokens`, { ...anthropicHeaders(), ...headers }, body);
  /** The last CountTokens call: its InvokeModel body decoded, and that body's text. */
  const counted = () => {
    const sent = bedrock.requests.at(-1)!;
    const input = sent.json?.input as { invokeModel: { body: string } };
    const text = new TextDecoder().decode(Uint8Array.fromBase64(input.invokeModel.body));
    return { sent, text, body: JSON.parse(text) };
  };
  const { max_tokens: _, stream: __, ...ask } = bodies.messages("claude-text");
  try {
    await t.step("signed, Bedrock's InvokeModel body, Anthropic's answer shape", async () => {
      const res = await count(ask, { "anthropic-beta": "token-counting-2024-11-01" });
      const answer = await res.json();
      assert.equal(res.status, 200, JSON.stringify(answer));
      const { sent, text, body } = counted();
      assert.equal(sent.path, "/model/claude-text/count-tokens");
      assert.match(sent.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIA/);
      assert.deepEqual(Object.keys(sent.json!), ["input"]);
      assert.equal(body.anthropic_version, "bedrock-2023-05-31");
      assert.deepEqual(body.anthropic_beta, ["token-counting-2024-11-01"]);
      assert.equal(body.model, undefined);
      assert.equal(body.max_tokens, 1); // InvokeModel requires one; the count ignores it
      assert.deepEqual(body.messages, ask.messages);
      // The mock counts the decoded body: the number is Bedrock's, renamed.
      assert.deepEqual(answer, { input_tokens: Math.ceil(text.length / 4) });
      assert.equal(h.logs.at(-1)!.input_tokens, answer.input_tokens);
    });

    await t.step("with thinking, max_tokens stays above the budget", async () => {
      const thinking = { type: "enabled", budget_tokens: 2048 };
      const res = await count({ ...ask, thinking });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      assert.equal(counted().body.max_tokens, 2049);
    });

    await t.step("the Anthropic SDK counts through it; ids with `:` stay one segment", async () => {
      const client = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
      const answer = await client.messages.countTokens({
        model: "colon-text",
        messages: [{ role: "user", content: "How many tokens is this?" }],
      });
      assert.equal(answer.input_tokens, Math.ceil(counted().text.length / 4));
      assert.equal(counted().sent.path, "/model/anthropic.claude-text-v1%3A0/count-tokens");
    });

    await t.step("an answer without the count is a 502, not a made-up number", () => {
      assert.throws(() => countTokensAnswer({ tokens: 3 }), (e: GatewayError) => {
        assert.equal(e.status, 502);
        assert.match(e.message, /without a number in inputTokens/);
        return true;
      });
    });
  } finally {
    await h.close();
    await bedrock.close();
  }
});

Deno.test("aws-bedrock: Bedrock's own counts (stream metrics, JSON headers) are what usage counts, relayed and converted", async () => {
  const bedrock = await startMockBedrock({ apiKey: BEDROCK_KEY });
  const h = await startPlatformGateway(bedrockConfig(bedrock.url));
  const model = "claude-billed-text";
  const { input, output } = {
    input: TOKENS.input + BILLED_EXTRA,
    output: TOKENS.text + BILLED_EXTRA,
  };
  try {
    // Relayed: the client's events stay Anthropic's as Bedrock sent them.
    const relayed = sseEvents(await (await messages(h.url, bodies.messages(model, true))).text());
    const delta = relayed.find((e) => e.type === "message_delta")!;
    assert.equal((delta.usage as { output_tokens: number }).output_tokens, TOKENS.text);
    assert.ok(relayed.at(-1)!["amazon-bedrock-invocationMetrics"]);
    assert.deepEqual([h.logs.at(-1)!.input_tokens, h.logs.at(-1)!.output_tokens], [input, output]);

    // Converted: the chat client's usage is Bedrock's count too.
    const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), {
      ...bodies.chat(model, true),
      stream_options: { include_usage: true },
    });
    const usage = sseEvents(await res.text()).at(-1)!.usage as Record<string, number>;
    assert.deepEqual([usage.prompt_tokens, usage.completion_tokens], [input, output]);
    assert.deepEqual([h.logs.at(-1)!.input_tokens, h.logs.at(-1)!.output_tokens], [input, output]);

    // JSON answers: the counts are Bedrock's x-amzn-bedrock-*-token-count headers.
    const json = await (await messages(h.url, bodies.messages(model))).json();
    assert.equal(json.usage.output_tokens, TOKENS.text); // the body as Bedrock wrote it
    assert.deepEqual([h.logs.at(-1)!.input_tokens, h.logs.at(-1)!.output_tokens], [input, output]);
    const converted = await (await post(`${h.url}/v1/chat/completions`, openaiHeaders(), {
      ...bodies.chat(model),
    })).json();
    const { prompt_tokens, completion_tokens } = converted.usage;
    assert.deepEqual([prompt_tokens, completion_tokens], [input, output]);

    const counted = h.gw.metrics.expose().match(
      /^gateway_tokens_total\{[^}]*model="claude-billed-text",type="input"[^}]*\} (\d+)$/m,
    );
    assert.equal(counted?.[1], String(4 * input));
  } finally {
    await h.close();
    await bedrock.close();
  }
});
