/**
 * A gateway for Bedrock's clients (plugins/bedrock/, plugins/converse/): routes of every family
 * on the mock upstream (`msg-*` Anthropic, `chat-*` OpenAI chat, `gem-*` Gemini) and on the
 * Bedrock mock (`bi-*` Claude through InvokeModel, `bc-*` Converse), the model's other words
 * picking the mock's scenario; Claude Code's default Bedrock model ids (`us.anthropic.…`) and
 * ARNs go to the Bedrock mock's Claude; `fo-err429` and `fo-earlyerr` fail over from a throttling
 * Bedrock to Anthropic. Keys: `team-a` in plaintext (it can sign), `team-b` as
 * a digest only.
 */
import { validateConfig } from "../src/config/config.ts";
import { checkFormats } from "../src/config/config.ts";
import { createGateway } from "../src/server.ts";
import type { Gateway } from "../src/request/context.ts";
import { FORMATS, HASHED_KEY, KEY, serveGateway, sha256Hex } from "./helpers.ts";
import { BEDROCK_TEST_CREDENTIALS, startMockBedrock } from "./mock/bedrock.ts";
import { decodeFrames } from "./mock/eventstream.ts";
import { type MockUpstream, startMockUpstream } from "./mock/upstream.ts";

export { HASHED_KEY, KEY };

export interface BedrockClientHarness {
  url: string;
  gw: Gateway;
  /** The vendors' mock (Anthropic, chat, Gemini). */
  vendors: MockUpstream;
  bedrock: MockUpstream;
  /** Every request the gateway received: whether it came with a `host` header (HTTP/1.1). */
  received: { path: string; host: boolean; authorization: string }[];
  logs: Record<string, unknown>[];
  /** Upstream calls so far, on both mocks. */
  calls(): number;
  close(): Promise<void>;
}

/** `limits`: team-a's (docs/limits.md); none by default. */
export async function startBedrockClientHarness(
  limits?: Record<string, number>,
): Promise<BedrockClientHarness> {
  const vendors = await startMockUpstream();
  const bedrock = await startMockBedrock();
  const { accessKeyId, secretAccessKey, sessionToken } = BEDROCK_TEST_CREDENTIALS;
  const aws = {
    region: "us-east-1",
    access_key_id: accessKeyId,
    secret_access_key: secretAccessKey,
    session_token: sessionToken,
  };
  const onBedrock = (name: string, api: string) => ({
    name,
    api,
    platform: "aws-bedrock",
    base_url: bedrock.url,
    aws,
  });
  const config = validateConfig({
    keys: [
      { name: "team-a", key: KEY, ...(limits && { limits }) },
      { name: "team-b", sha256: await sha256Hex(HASHED_KEY) },
    ],
    metrics: { hostname: "127.0.0.1", port: 0 },
    providers: [
      { name: "anthropic", api: "messages", base_url: vendors.url, api_key: "sk-ant" },
      { name: "openai", api: "chat", base_url: `${vendors.url}/v1`, api_key: "sk-oai" },
      { name: "gemini", api: "generate-content", base_url: vendors.url, api_key: "g-key" },
      onBedrock("bedrock-claude", "messages"),
      onBedrock("bedrock-converse", "converse"),
    ],
    routes: [
      { models: ["msg-*"], provider: "anthropic" },
      { models: ["chat-*"], provider: "openai" },
      { models: ["gem-*"], provider: "gemini" },
      { models: ["bi-*"], provider: "bedrock-claude" },
      { models: ["bc-*"], provider: "bedrock-converse" },
      {
        models: ["us.anthropic.*", "arn:aws:bedrock:*"],
        provider: "bedrock-claude",
        model: "bi-text",
      },
      // Bedrock throttling (a 429, or a throttlingException frame before content), then Anthropic.
      ...["err429", "earlyerr"].map((fault) => ({
        models: [`fo-${fault}`],
        targets: [
          { provider: "bedrock-claude", model: `bi-${fault}` },
          { provider: "anthropic", model: "msg-text" },
        ],
      })),
    ],
  });
  checkFormats(config, FORMATS);
  const received: BedrockClientHarness["received"] = [];
  const served = serveGateway(await createGateway(config, FORMATS), (req) =>
    received.push({
      path: new URL(req.url).pathname,
      host: req.headers.has("host"),
      authorization: req.headers.get("authorization") ?? "",
    }));
  return {
    ...served,
    vendors,
    bedrock,
    received,
    calls: () => vendors.requests.length + bedrock.requests.length,
    async close() {
      await served.close();
      await vendors.close();
      await bedrock.close();
    },
  };
}

const decoder = new TextDecoder();

/** One frame of a Bedrock client stream, read by the mock's own decoder. */
export interface ClientFrame {
  /** `:event-type` (`chunk`, `messageStart`, …) or `:exception-type`. */
  type: string;
  exception: boolean;
  /** The payload's JSON; a `chunk`'s is its decoded Anthropic event. */
  data: Record<string, unknown>;
}

/** A Bedrock client stream's frames, `chunk`s unwrapped. */
export function clientFrames(bytes: Uint8Array): ClientFrame[] {
  return decodeFrames(bytes).map(({ headers, payload }) => {
    const exception = headers[":message-type"] === "exception";
    const type = exception ? headers[":exception-type"] : headers[":event-type"];
    let data = JSON.parse(decoder.decode(payload));
    if (type === "chunk") data = JSON.parse(decoder.decode(Uint8Array.fromBase64(data.bytes)));
    return { type, exception, data };
  });
}
