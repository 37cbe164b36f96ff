/**
 * Clients of every format through the gateway to a Bedrock Converse provider (`api: converse`):
 * the published SDKs against the gateway, the gateway against the loopback Bedrock
 * (tests/mock/bedrock.ts), which checks the provider's credential as Bedrock does. Text, tool
 * loops with reasoning, throttling exception frames that fail over, cut event streams, usage.
 */
import assert from "node:assert/strict";
import { validateConfig } from "../src/config/config.ts";
import { Formats } from "../src/request/formats.ts";
import { createGateway } from "../src/server.ts";
import { BEDROCK_TEST_CREDENTIALS, startMockBedrock } from "./mock/bedrock.ts";
import { type MockUpstream, type RecordedRequest, startMockUpstream } from "./mock/upstream.ts";
import {
  assertDisconnectAborts,
  cutShort,
  FORMATS,
  INGRESS,
  KEY,
  post,
  PROVIDER_KEY,
} from "./helpers.ts";
import { Anthropic, GoogleGenAI, OpenAI } from "./sdk/deps.ts";
import { bedrockProvider, platformConfig, startPlatformGateway } from "./platform_harness.ts";

/** A Bedrock API key: the provider key of a Converse provider without a platform (Bearer). */
const BEDROCK_KEY = "bedrock-api-key-ABSKQmVkcm9ja0FQSUtleQ";
const USER = "What is the weather like?";
const hello = (text = USER) => `Hello from converse mock: ${text}`;

interface Setup {
  url: string;
  mock: MockUpstream;
  /** An Anthropic API (`anthropic`, first target of `mixed-*`, then Bedrock). */
  anthropicMock: MockUpstream;
  metrics: () => string;
  logs: Record<string, unknown>[];
}

/** How the gateway authenticates to Bedrock. */
type Auth = "sigv4" | "platform-api-key" | "api-key";

/** A Converse provider: on the aws-bedrock platform (SigV4, or a Bedrock API key), or bare. */
function converseProvider(name: string, base_url: string, auth: Auth) {
  if (auth === "sigv4") return { ...bedrockProvider(name, base_url), api: "converse" };
  const provider = { name, api: "converse", base_url, api_key: BEDROCK_KEY };
  if (auth === "api-key") return provider;
  return { ...provider, platform: "aws-bedrock", aws: { region: "us-east-1" } };
}

/**
 * `cv-*` goes to Converse with the requested name as the model id; `fo-*` tries a stream that
 * is throttled before its content, then a good one; `throttled-*` has only the throttled one;
 * `mixed-*` tries Anthropic's API first, then Converse.
 */
async function withGateway(test: (s: Setup) => Promise<void>, auth: Auth = "sigv4") {
  const mock = await startMockBedrock({ apiKey: BEDROCK_KEY });
  const anthropicMock = await startMockUpstream();
  const provider = (name: string) => converseProvider(name, mock.url, auth);
  const config = platformConfig({
    providers: [
      provider("bedrock"),
      provider("bedrock-b"),
      { name: "anthropic", api: "messages", base_url: anthropicMock.url, api_key: PROVIDER_KEY },
    ],
    routes: [
      { models: ["cv-*"], provider: "bedrock" },
      {
        models: ["mixed-*"],
        targets: [
          { provider: "anthropic", model: "claude-think-tool" },
          { provider: "bedrock", model: "anthropic.claude-think-tool" },
        ],
      },
      {
        models: ["fo-*"],
        targets: [
          { provider: "bedrock", model: "anthropic.claude-earlyerr" },
          { provider: "bedrock-b", model: "anthropic.claude-text" },
        ],
      },
      {
        models: ["throttled-*"],
        provider: "bedrock",
        model: "anthropic.claude-earlyerr",
        retry: { attempts: 1 },
      },
    ],
  });
  const served = await startPlatformGateway(config);
  try {
    await test({
      url: served.url,
      mock,
      anthropicMock,
      metrics: () => served.gw.metrics.expose(),
      logs: served.logs,
    });
  } finally {
    await served.close();
    await mock.close();
    await anthropicMock.close();
  }
}

const openai = (url: string) => new OpenAI({ apiKey: KEY, baseURL: `${url}/v1`, maxRetries: 0 });
const anthropic = (url: string) => new Anthropic({ apiKey: KEY, baseURL: url, maxRetries: 0 });
const genai = (url: string) =>
  new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: url, retryOptions: { attempts: 1 } } });

const lastRequest = (mock: MockUpstream): RecordedRequest => mock.requests.at(-1)!;

/**
 * The upstream call the gateway made: the Converse operation for the model, credentialed as
 * `auth` says (the mock has verified the signature or the key before answering).
 */
function assertConverseCall(mock: MockUpstream, model: string, stream: boolean, auth: Auth) {
  const r = lastRequest(mock);
  const op = stream ? "converse-stream" : "converse";
  assert.equal(r.path, `/model/${encodeURIComponent(model)}/${op}`);
  if (auth === "sigv4") {
    assert.match(
      r.headers.authorization,
      /^AWS4-HMAC-SHA256 Credential=AKIAMOCKBEDROCK00001\/\d{8}\/us-east-1\/bedrock\/aws4_request,/,
    );
    assert.equal(r.headers["x-amz-security-token"], BEDROCK_TEST_CREDENTIALS.sessionToken);
  } else assert.equal(r.headers.authorization, `Bearer ${BEDROCK_KEY}`);
  assert.equal(r.json?.modelId, undefined, "the model id travels in the path only");
}

for (const auth of ["sigv4", "platform-api-key", "api-key"] as const) {
  Deno.test(`converse via gateway (${auth}): chat, Responses, messages and generateContent clients get text, JSON and stream`, () =>
    withGateway(async ({ url, mock }) => {
      const model = "cv-anthropic.claude-text";
      const oa = openai(url);
      const chat = await oa.chat.completions.create({
        model,
        messages: [{ role: "user", content: USER }],
      });
      assert.equal(chat.choices[0].message.content, hello());
      assert.equal(chat.choices[0].finish_reason, "stop");
      assert.deepEqual(
        [
          chat.usage?.prompt_tokens,
          chat.usage?.completion_tokens,
          chat.usage?.prompt_tokens_details?.cached_tokens,
        ],
        [11, 7, 3],
      );
      assertConverseCall(mock, model, false, auth);

      let streamed = "";
      for await (
        const chunk of await oa.chat.completions.create({
          model,
          stream: true,
          messages: [{ role: "user", content: USER }],
        })
      ) streamed += chunk.choices[0]?.delta?.content ?? "";
      assert.equal(streamed, hello());
      assertConverseCall(mock, model, true, auth);

      const resp = await oa.responses.create({ model, input: USER });
      assert.equal(resp.output_text, hello());
      let rtext = "";
      let completed = false;
      for await (const e of await oa.responses.create({ model, input: USER, stream: true })) {
        if (e.type === "response.output_text.delta") rtext += e.delta;
        if (e.type === "response.completed") completed = true;
      }
      assert.equal(rtext, hello());
      assert.ok(completed);
      assertConverseCall(mock, model, true, auth);

      const an = anthropic(url);
      const msg = await an.messages.create({
        model,
        max_tokens: 200,
        messages: [{ role: "user", content: USER }],
      });
      assert.deepEqual(msg.content, [{ type: "text", text: hello() }]);
      assert.equal(msg.stop_reason, "end_turn");
      const final = await an.messages.stream({
        model,
        max_tokens: 200,
        messages: [{ role: "user", content: USER }],
      }).finalMessage();
      assert.equal(final.content[0].type === "text" && final.content[0].text, hello());
      assert.equal(lastRequest(mock).json?.inferenceConfig?.maxTokens, 200);

      const g = genai(url);
      const gen = await g.models.generateContent({ model, contents: USER });
      assert.equal(gen.text, hello());
      let gtext = "";
      for await (const c of await g.models.generateContentStream({ model, contents: USER })) {
        gtext += c.text ?? "";
      }
      assert.equal(gtext, hello());
      assertConverseCall(mock, model, true, auth);
    }, auth));
}

Deno.test("converse via gateway: a Claude Code style tool loop with thinking keeps Converse's signed reasoning", () =>
  withGateway(async ({ url, mock }) => {
    const model = "cv-anthropic.claude-think-tool";
    const an = anthropic(url);
    const tools = [{
      name: "get_weather",
      description: "Weather of a city",
      input_schema: { type: "object" as const, properties: { city: { type: "string" } } },
    }];
    const first = await an.messages.stream({
      model,
      max_tokens: 4096,
      thinking: { type: "enabled", budget_tokens: 2048 },
      tools,
      messages: [{ role: "user", content: USER }],
    }).finalMessage();
    assert.equal(first.stop_reason, "tool_use");
    const [thinking, call] = first.content;
    assert.equal(thinking.type, "thinking");
    assert.equal(call.type, "tool_use");
    if (thinking.type !== "thinking" || call.type !== "tool_use") return;
    // The Converse signature rides in Anthropic's slot, marked with its family.
    assert.match(thinking.signature, /^gwsig1:converse:/);
    const upstreamSignature = thinking.signature.replace(/^gwsig1:converse:/, "");
    assert.equal(
      lastRequest(mock).json?.additionalModelRequestFields?.thinking?.budget_tokens,
      2048,
    );

    const second = await an.messages.create({
      model,
      max_tokens: 4096,
      thinking: { type: "enabled", budget_tokens: 2048 },
      tools,
      messages: [
        { role: "user", content: USER },
        { role: "assistant", content: first.content },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: call.id, content: "sunny" }],
        },
      ],
    });
    const sent = lastRequest(mock).json!;
    assert.deepEqual(sent.messages[1].content[0], {
      reasoningContent: {
        reasoningText: { text: thinking.thinking, signature: upstreamSignature },
      },
    });
    assert.deepEqual(sent.messages[1].content[1].toolUse.input, { city: "Paris" });
    assert.deepEqual(sent.messages[2].content[0].toolResult, {
      toolUseId: call.id,
      content: [{ text: "sunny" }],
    });
    // Thinking stays on: the tool turn carries Converse's own signed reasoning.
    assert.ok(sent.additionalModelRequestFields?.thinking, JSON.stringify(sent));
    const answer = second.content.at(-1);
    assert.equal(answer?.type === "text" && answer.text, "Tool said: sunny");
  }));

Deno.test("converse via gateway: chat (stream) and generateContent tool calls go round trip", () =>
  withGateway(async ({ url, mock }) => {
    const model = "cv-anthropic.claude-tool";
    const oa = openai(url);
    const tools = [{
      type: "function" as const,
      function: {
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } } },
      },
    }];
    const messages = [{ role: "user" as const, content: USER }];
    let id = "";
    let args = "";
    let finish: string | null = null;
    for await (
      const chunk of await oa.chat.completions.create({ model, messages, tools, stream: true })
    ) {
      const call = chunk.choices[0]?.delta?.tool_calls?.[0];
      id ||= call?.id ?? "";
      args += call?.function?.arguments ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, "tool_calls");
    assert.deepEqual(JSON.parse(args), { city: "Paris" });
    const answer = await oa.chat.completions.create({
      model,
      tools,
      messages: [
        ...messages,
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id,
            type: "function",
            function: { name: "get_weather", arguments: args },
          }],
        },
        { role: "tool", tool_call_id: id, content: "sunny" },
      ],
    });
    assert.equal(answer.choices[0].message.content, "Tool said: sunny");
    assert.deepEqual(lastRequest(mock).json!.messages[2].content[0].toolResult, {
      toolUseId: id,
      content: [{ text: "sunny" }],
    });

    const g = genai(url);
    const config = {
      tools: [{
        functionDeclarations: [{
          name: "get_weather",
          parametersJsonSchema: { type: "object", properties: { city: { type: "string" } } },
        }],
      }],
    };
    const first = await g.models.generateContent({ model, contents: USER, config });
    const fc = first.functionCalls?.[0];
    assert.equal(fc?.name, "get_weather");
    assert.deepEqual(fc?.args, { city: "Paris" });
    const second = await g.models.generateContent({
      model,
      config,
      contents: [
        { role: "user", parts: [{ text: USER }] },
        { role: "model", parts: [{ functionCall: fc }] },
        {
          role: "user",
          parts: [{
            functionResponse: { id: fc?.id, name: "get_weather", response: { output: "sunny" } },
          }],
        },
      ],
    });
    assert.match(second.text ?? "", /^Tool said: .*sunny/);
  }));

Deno.test("converse via gateway: a Responses tool loop (stream) carries reasoning in encrypted_content", () =>
  withGateway(async ({ url, mock }) => {
    const model = "cv-anthropic.claude-think-tool";
    const oa = openai(url);
    const tools = [{
      type: "function" as const,
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } } },
      strict: false,
    }];
    let done;
    for await (
      const e of await oa.responses.create({
        model,
        input: USER,
        tools,
        reasoning: { effort: "low" },
        include: ["reasoning.encrypted_content"],
        stream: true,
      })
    ) if (e.type === "response.completed") done = e.response;
    assert.ok(done);
    const reasoning = done.output.find((o) => o.type === "reasoning");
    const call = done.output.find((o) => o.type === "function_call");
    assert.ok(reasoning?.type === "reasoning" && reasoning.encrypted_content);
    assert.ok(call?.type === "function_call");
    assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });

    const next = await oa.responses.create({
      model,
      tools,
      reasoning: { effort: "low" },
      input: [
        { role: "user", content: USER },
        reasoning,
        call,
        { type: "function_call_output", call_id: call.call_id, output: "sunny" },
      ],
    });
    assert.equal(next.output_text, "Tool said: sunny");
    const assistant = lastRequest(mock).json!.messages[1].content;
    assert.ok(assistant[0].reasoningContent?.reasoningText?.signature, JSON.stringify(assistant));
  }));

Deno.test("converse via gateway: a throttlingException frame before content fails over; alone it is a 429", () =>
  withGateway(async ({ url, mock }) => {
    const oa = openai(url);
    let text = "";
    for await (
      const chunk of await oa.chat.completions.create({
        model: "fo-anything",
        stream: true,
        messages: [{ role: "user", content: USER }],
      })
    ) text += chunk.choices[0]?.delta?.content ?? "";
    assert.equal(text, hello());
    assert.deepEqual(
      mock.requests.map((r) => decodeURIComponent(r.path)),
      [
        "/model/anthropic.claude-earlyerr/converse-stream",
        "/model/anthropic.claude-text/converse-stream",
      ],
    );

    const res = await post(`${url}/v1/messages`, {
      "x-api-key": KEY,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    }, {
      model: "throttled-x",
      max_tokens: 100,
      stream: true,
      messages: [{ role: "user", content: USER }],
    });
    const body = await res.text();
    assert.match(body, /rate_limit_error/);
    assert.match(body, /Too many requests/);
  }));

Deno.test("converse via gateway: a cut event stream ends with the interruption in each client's framing", async (t) => {
  await withGateway(async ({ url }) => {
    for (const c of INGRESS) {
      await t.step(c.name, async () => {
        const model = "cv-anthropic.claude-cut";
        const res = await post(url + c.path(model, true), c.headers, c.body(model, true));
        const bytes = await res.bytes();
        const text = new TextDecoder().decode(bytes);
        assert.ok(cutShort(c, bytes), text);
        assert.doesNotMatch(
          text,
          /message_stop|messageStop|response\.completed|finishReason|interaction\.completed/,
        );
      });
    }
  });
});

Deno.test("converse via gateway: a client that leaves mid-stream aborts the ConverseStream call", async (t) => {
  await withGateway(async ({ url, mock }) => {
    for (const c of INGRESS) {
      await t.step(
        c.name,
        () =>
          assertDisconnectAborts({ url, upstream: mock }, c, "cv-anthropic.claude-slow", c.name),
      );
    }
  });
});

Deno.test("converse via gateway: usage reaches the metrics, under gen_ai provider aws.bedrock", () =>
  withGateway(async ({ url, metrics, logs }) => {
    const model = "cv-anthropic.claude-text";
    for (const stream of [false, true]) {
      const res = await post(`${url}/v1/chat/completions`, {
        authorization: `Bearer ${KEY}`,
        "content-type": "application/json",
      }, { model, stream, messages: [{ role: "user", content: USER }] });
      await res.text();
    }
    const text = metrics();
    const input = text.match(
      /^gateway_tokens_total\{key="team-a",route="[^"]*",provider="bedrock",model="cv-anthropic\.claude-text",type="input",billable="true"\} (\d+)$/m,
    );
    assert.equal(input?.[1], "22", text);
    assert.match(text, /gen_ai_client_token_usage_sum\{[^}]*gen_ai_provider_name="aws\.bedrock"/);
    assert.deepEqual(logs.map((l) => [l.input_tokens, l.output_tokens]), [[11, 7], [11, 7]]);
  }));

Deno.test("registry: a format without a dialect is served to providers only", () => {
  const plugins = FORMATS.plugins;
  const converse = plugins.find((p) => p.id === "converse")!;
  const others = plugins.filter((p) => p !== converse);
  // Converse as it was before it had clients: no dialect, no paths, no endpoints.
  const upstreamOnly = { ...converse, dialect: undefined, paths: [], endpoints: [] };
  const formats = new Formats([...others, upstreamOnly]);
  assert.ok(!formats.clients.includes(upstreamOnly as never));
  assert.ok(formats.ids.includes("converse"));
  assert.throws(
    () => new Formats([...others, { ...upstreamOnly, paths: ["/model/"] }]),
    /format "converse" serves clients but has no dialect/,
  );
});

Deno.test("converse via gateway: the secret key and session token never reach the client, even echoed", () =>
  withGateway(async ({ url }) => {
    // `echo`: the mock's answer quotes the credentials of the request it got.
    const res = await post(`${url}/v1/chat/completions`, {
      authorization: `Bearer ${KEY}`,
      "content-type": "application/json",
    }, { model: "cv-anthropic.claude-echo", messages: [{ role: "user", content: USER }] });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.match(text, /AWS4-HMAC-SHA256/, "the mock quoted the request's credentials");
    assert.doesNotMatch(text, new RegExp(BEDROCK_TEST_CREDENTIALS.sessionToken));
    assert.doesNotMatch(text, new RegExp(BEDROCK_TEST_CREDENTIALS.secretAccessKey));
    // The access key id and the signature the quoted header carries, too.
    assert.doesNotMatch(text, new RegExp(BEDROCK_TEST_CREDENTIALS.accessKeyId));
    assert.doesNotMatch(text, /Signature=[0-9a-f]{64}/);
    assert.match(text, /Signature=\[redacted\]/);
  }));

Deno.test("converse via gateway: a bad aws block is a config error at its path", async () => {
  const config = validateConfig({
    listen: { hostname: "127.0.0.1", port: 0 },
    keys: [{ name: "team-a", key: KEY }],
    providers: [{
      name: "bedrock",
      api: "converse",
      platform: "aws-bedrock",
      aws: { region: "Virginia", access_key_id: "AKIA0000" },
    }],
    routes: [{ models: ["*"], provider: "bedrock" }],
  });
  await assert.rejects(
    createGateway(config, FORMATS),
    (e: Error) =>
      /providers\[0\]\.aws\.region: an AWS region such as us-east-1/.test(e.message) &&
      /providers\[0\]\.aws\.secret_access_key: give access_key_id and secret_access_key together/
        .test(e.message),
  );
});

Deno.test("converse via gateway: Converse reasoning is its own family; a conversation carrying it skips Anthropic targets", () =>
  withGateway(async ({ url, mock, anthropicMock }) => {
    const an = anthropic(url);
    const turn = {
      model: "mixed-x",
      max_tokens: 4096,
      thinking: { type: "enabled" as const, budget_tokens: 2048 },
      tools: [{
        name: "get_weather",
        input_schema: { type: "object" as const, properties: { city: { type: "string" } } },
      }],
    };
    // A fresh conversation goes to the first target, Anthropic.
    const first = await an.messages.create({
      ...turn,
      messages: [{ role: "user", content: USER }],
    });
    assert.equal(anthropicMock.requests.length, 1);
    assert.equal(mock.requests.length, 0);
    const [thinking, call] = first.content;
    assert.ok(thinking.type === "thinking" && call.type === "tool_use");
    // History signed on Converse (as Bedrock gave it) stays on Converse.
    const converseSigned = { ...thinking, signature: "gwsig1:converse:sig-from-bedrock" };
    await an.messages.create({
      ...turn,
      messages: [
        { role: "user", content: USER },
        { role: "assistant", content: [converseSigned, call] },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: call.id, content: "sunny" }],
        },
      ],
    });
    assert.equal(anthropicMock.requests.length, 1, "the Anthropic target was skipped");
    const sent = lastRequest(mock).json!;
    assert.equal(
      sent.messages[1].content[0].reasoningContent.reasoningText.signature,
      "sig-from-bedrock",
    );
  }));
