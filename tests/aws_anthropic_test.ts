/**
 * Claude Platform on AWS (`platform: aws-anthropic`, plugins/platforms/aws_anthropic.ts)
 * against its mock (tests/mock/aws_anthropic.ts: the workspace header required, SigV4 for
 * service `aws-external-anthropic` checked by an independent verifier, or the workspace API key
 * as a Bearer; `x-api-key` refused): Messages clients relayed (JSON, SSE, count_tokens), chat
 * clients converted, with either credential; Anthropic's errors read as Anthropic's; the
 * official `@anthropic-ai/aws-sdk` accepted by the mock as it signs (the mock is faithful).
 */
import assert from "node:assert/strict";
import {
  AWS_ANTHROPIC_API_KEY,
  AWS_ANTHROPIC_CREDENTIALS,
  AWS_ANTHROPIC_WORKSPACE,
  startMockAwsAnthropic,
} from "./mock/aws_anthropic.ts";
import { anthropicHeaders, bodies, KEY, openaiHeaders, post } from "./helpers.ts";
import { ConfigError, validateConfig } from "../src/config/config.ts";
import { checkFormats } from "../src/config/config.ts";
import { platformConfig, sseEvents, startPlatformGateway } from "./platform_harness.ts";
import { FORMATS } from "./helpers.ts";
import { AnthropicAws } from "./sdk/platforms.ts";

const { accessKeyId, secretAccessKey } = AWS_ANTHROPIC_CREDENTIALS;

function config(base: string) {
  const provider = (name: string, aws: Record<string, unknown>, extra = {}) => ({
    name,
    api: "messages",
    platform: "aws-anthropic",
    base_url: base,
    aws: { region: "us-east-1", workspace_id: AWS_ANTHROPIC_WORKSPACE, ...aws },
    ...extra,
  });
  return platformConfig({
    providers: [
      provider("signed", { access_key_id: accessKeyId, secret_access_key: secretAccessKey }),
      provider("keyed", {}, { api_key: AWS_ANTHROPIC_API_KEY }),
    ],
    routes: [
      { models: ["sig-*"], provider: "signed", model: "claude-text" },
      { models: ["key-*"], provider: "keyed", model: "claude-text" },
      { models: ["err-*"], provider: "signed", model: "claude-err429" },
    ],
  });
}

const messages = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  post(`${url}/v1/messages`, { ...anthropicHeaders(), ...headers }, body);

Deno.test("aws-anthropic: Messages relayed and chat converted, signed or with the workspace key", async (t) => {
  const aws = await startMockAwsAnthropic();
  const h = await startPlatformGateway(config(aws.url));
  const last = () => aws.requests.at(-1)!;
  try {
    for (
      const [prefix, credential] of [[
        "sig",
        /^AWS4-HMAC-SHA256 Credential=AKIAMOCKCLAUDEAWS0001\/\d{8}\/us-east-1\/aws-external-anthropic\/aws4_request,/,
      ], ["key", new RegExp(`^Bearer ${AWS_ANTHROPIC_API_KEY}$`)]] as const
    ) {
      await t.step(
        `${prefix}: messages JSON relayed, the workspace named, never x-api-key`,
        async () => {
          const res = await messages(h.url, bodies.messages(`${prefix}-1`), {
            "anthropic-beta": "context-1m-2025-08-07",
          });
          assert.equal(res.status, 200, await res.clone().text());
          const json = await res.json();
          assert.equal(json.type, "message");
          const sent = last();
          assert.equal(sent.path, "/v1/messages");
          assert.equal(sent.headers["anthropic-workspace-id"], AWS_ANTHROPIC_WORKSPACE);
          assert.equal(sent.headers["x-api-key"], undefined);
          assert.match(sent.headers.authorization, credential);
          assert.equal(sent.headers["anthropic-beta"], "context-1m-2025-08-07");
          assert.equal(sent.headers["anthropic-version"], "2023-06-01");
          // Anthropic's body as is: the model renamed, nothing moved into it.
          assert.equal(sent.json?.model, "claude-text");
          assert.equal(sent.json?.anthropic_version, undefined);
          assert.ok(!JSON.stringify(sent.headers).includes(KEY), "the client key never goes up");
        },
      );

      await t.step(`${prefix}: a stream relayed as Anthropic's SSE`, async () => {
        const res = await messages(h.url, bodies.messages(`${prefix}-1`, true));
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
        const events = sseEvents(await res.text());
        assert.equal(events[0].type, "message_start");
        assert.equal(events.at(-1)!.type, "message_stop");
        assert.equal(last().json?.stream, true);
      });

      await t.step(`${prefix}: count_tokens relayed to /v1/messages/count_tokens`, async () => {
        const { max_tokens: _, ...body } = bodies.messages(`${prefix}-1`);
        const res = await post(`${h.url}/v1/messages/count_tokens`, anthropicHeaders(), body);
        assert.equal(res.status, 200);
        assert.ok((await res.json()).input_tokens > 0);
        assert.equal(last().path, "/v1/messages/count_tokens");
        assert.equal(last().headers["anthropic-workspace-id"], AWS_ANTHROPIC_WORKSPACE);
      });

      await t.step(`${prefix}: a chat client converted to Anthropic's body`, async () => {
        const res = await post(`${h.url}/v1/chat/completions`, openaiHeaders(), {
          model: `${prefix}-chat`,
          messages: [{ role: "user", content: "hi there" }],
        });
        assert.equal(res.status, 200);
        const json = await res.json();
        assert.match(json.choices[0].message.content, /hi there/);
        assert.equal(last().json?.max_tokens !== undefined, true);
        assert.match(last().headers.authorization, credential);
      });
    }

    await t.step("Anthropic's rate limit reaches the client as Anthropic's", async () => {
      const res = await messages(h.url, bodies.messages("err-1"));
      assert.equal(res.status, 429);
      const json = await res.json();
      assert.equal(json.type, "error");
      assert.equal(json.error.type, "rate_limit_error");
    });
  } finally {
    await h.close();
    await aws.close();
  }
});

Deno.test("aws-anthropic: a secret AWS refuses is the gateway's fault, not the client's", async () => {
  const aws = await startMockAwsAnthropic();
  const bad = platformConfig({
    providers: [{
      name: "signed",
      api: "messages",
      platform: "aws-anthropic",
      base_url: aws.url,
      aws: {
        region: "us-east-1",
        workspace_id: AWS_ANTHROPIC_WORKSPACE,
        access_key_id: accessKeyId,
        secret_access_key: "not-the-secret",
      },
    }],
    routes: [{ models: ["*"], provider: "signed", model: "claude-text" }],
  });
  const h = await startPlatformGateway(bad);
  try {
    const res = await messages(h.url, bodies.messages("any"));
    assert.equal(res.status, 502);
    const json = await res.json();
    assert.equal(json.error.type, "api_error");
    assert.match(json.error.message, /provider `signed` rejected the gateway's credential/);
    assert.equal(aws.requests.length, 1, "the mock saw the signed call, and refused it");
    assert.ok(!JSON.stringify(json).includes("not-the-secret"));
  } finally {
    await h.close();
    await aws.close();
  }
});

Deno.test("aws-anthropic: the aws block is checked at its path", () => {
  const check = (aws: unknown) => {
    try {
      checkFormats(
        validateConfig({
          keys: [{ name: "a", key: KEY }],
          providers: [{ name: "p", api: "messages", platform: "aws-anthropic", aws }],
          routes: [{ models: ["*"], provider: "p" }],
        }),
        FORMATS,
      );
      return "";
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      return e.message;
    }
  };
  assert.match(check({ region: "us-east-1" }), /providers\[0\]\.aws\.workspace_id/);
  assert.match(
    check({ region: "us-east-1", workspace_id: "w", access_key_id: "A" }),
    /providers\[0\]\.aws\.secret_access_key: give access_key_id and secret_access_key together/,
  );
  assert.equal(check({ region: "us-east-1", workspace_id: "w" }), "");
});

Deno.test("aws-anthropic mock: the official @anthropic-ai/aws-sdk is accepted as it signs", async (t) => {
  const aws = await startMockAwsAnthropic();
  try {
    for (
      const [name, options] of [
        ["SigV4", { awsAccessKey: accessKeyId, awsSecretAccessKey: secretAccessKey }],
        ["API key", { apiKey: AWS_ANTHROPIC_API_KEY }],
      ] as const
    ) {
      await t.step(name, async () => {
        const client = new AnthropicAws({
          ...options,
          awsRegion: "us-east-1",
          workspaceId: AWS_ANTHROPIC_WORKSPACE,
          baseURL: aws.url,
          maxRetries: 0,
        });
        const message = await client.messages.create({
          model: "claude-text",
          max_tokens: 100,
          messages: [{ role: "user", content: "hi there" }],
        });
        assert.equal(message.type, "message");
        const sent = aws.requests.at(-1)!;
        assert.equal(sent.headers["anthropic-workspace-id"], AWS_ANTHROPIC_WORKSPACE);
        assert.equal(sent.headers["x-api-key"], undefined);
      });
    }
  } finally {
    await aws.close();
  }
});
