/**
 * The cloud platform mocks (tests/mock/bedrock.ts, vertex.ts, azure.ts) proven faithful by the
 * platforms' official clients: each client signs or authenticates as it does against the real
 * service, and parses the mock's JSON answers, event streams and errors. A mock these clients
 * accept is a fair stand-in for the platform in the gateway's tests.
 */
import assert from "node:assert/strict";
import {
  BEDROCK_ANTHROPIC_VERSION,
  BEDROCK_TEST_CREDENTIALS,
  startMockBedrock,
} from "./mock/bedrock.ts";
import { TOKENS } from "./mock/upstream.ts";
import {
  AnthropicBedrock,
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelWithResponseStreamCommand,
} from "./sdk/platforms.ts";

const USER = "What is the weather like?";
/** A model id with `:` (sent as `%3A`) and an inference-profile ARN (with `/`). */
const CLAUDE_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const PROFILE_ARN =
  "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-think-tool";

function bedrockClient(
  endpoint: string,
  credentials: Partial<typeof BEDROCK_TEST_CREDENTIALS> = {},
) {
  return new BedrockRuntimeClient({
    region: "us-east-1",
    endpoint,
    credentials: { ...BEDROCK_TEST_CREDENTIALS, ...credentials },
  });
}

Deno.test("bedrock mock: Converse through @aws-sdk/client-bedrock-runtime (SigV4 with session token)", async () => {
  const mock = await startMockBedrock();
  const client = bedrockClient(mock.url);
  try {
    const out = await client.send(
      new ConverseCommand({
        modelId: CLAUDE_ID,
        messages: [{ role: "user", content: [{ text: USER }] }],
      }),
    );
    assert.equal(out.output?.message?.content?.[0].text, `Hello from converse mock: ${USER}`);
    assert.equal(out.stopReason, "end_turn");
    assert.equal(out.usage?.outputTokens, TOKENS.text);
    const sent = mock.requests.at(-1)!;
    assert.equal(sent.path, "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse");
    assert.equal(sent.headers["x-amz-security-token"], BEDROCK_TEST_CREDENTIALS.sessionToken);
  } finally {
    client.destroy();
    await mock.close();
  }
});
