/**
 * A loopback Claude Platform on AWS: Anthropic's Messages API (`POST /v1/messages`, JSON or
 * SSE, and `/v1/messages/count_tokens`, the mock's Anthropic vendor answering) behind AWS's
 * front door. Every request must name the workspace (`anthropic-workspace-id`) and carry either
 * a SigV4 signature for service `aws-external-anthropic` that the independent verifier
 * (sigv4.ts) accepts, or the workspace API key as `Authorization: Bearer`; an `x-api-key` is
 * refused (the official client never sends one). Front-door refusals are AWS's (`x-amzn-errortype`
 * and `{"message"}`); everything behind it is Anthropic's, errors included.
 */
import { bedrockError } from "./bedrock_wire.ts";
import { messages } from "./messages.ts";
import { type AwsCredentials, verifySigV4 } from "./sigv4.ts";
import { bodyStream, type MockUpstream, startMockUpstream } from "./upstream.ts";
import { countTokens } from "./vendor.ts";
import { TYPED_SSE } from "./wire.ts";

export const AWS_ANTHROPIC_CREDENTIALS: AwsCredentials = {
  accessKeyId: "AKIAMOCKCLAUDEAWS0001",
  secretAccessKey: "mock/claude-platform-on-aws/secret/0123456789",
};
export const AWS_ANTHROPIC_API_KEY = "sk-ant-aws-mock-workspace-key-0123456789";
export const AWS_ANTHROPIC_WORKSPACE = "wrkspc_01MockWorkspace";

export interface AwsAnthropicOptions {
  region?: string;
  credentials?: AwsCredentials;
  apiKey?: string;
  workspace?: string;
}

function refusal(status: number, type: string, message: string): Response {
  const e = bedrockError(status, type, message);
  return new Response(JSON.stringify(e.body), {
    status: e.status,
    headers: { "content-type": "application/json", ...e.headers },
  });
}

/** Claude Platform on AWS on loopback (`url` is its base URL). */
export function startMockAwsAnthropic(options: AwsAnthropicOptions = {}): Promise<MockUpstream> {
  const region = options.region ?? "us-east-1";
  const credentials = options.credentials ?? AWS_ANTHROPIC_CREDENTIALS;
  const apiKey = options.apiKey ?? AWS_ANTHROPIC_API_KEY;
  const workspace = options.workspace ?? AWS_ANTHROPIC_WORKSPACE;
  return startMockUpstream({
    platform: {
      endpoints: [
        { path: /^\/v1\/messages$/, vendor: messages, framing: bodyStream(TYPED_SSE) },
        {
          path: /^\/v1\/messages\/count_tokens$/,
          vendor: messages,
          answer: (c) => ({ input_tokens: countTokens(c.text) }),
        },
      ],
      fallback: messages,
      credential: (h) => h.get("authorization") ?? "",
      async intercept(req, url, text) {
        if (req.headers.has("x-api-key")) {
          return refusal(403, "AccessDeniedException", "x-api-key is not accepted; use SigV4");
        }
        if (req.headers.get("anthropic-workspace-id") !== workspace) {
          return refusal(400, "ValidationException", "anthropic-workspace-id: unknown workspace");
        }
        const bearer = req.headers.get("authorization")?.match(/^Bearer (.+)$/)?.[1];
        if (bearer !== undefined) {
          if (bearer === apiKey) return undefined;
          return refusal(403, "UnrecognizedClientException", "The API key is invalid.");
        }
        const failure = await verifySigV4(req, url.pathname, text, credentials, {
          region,
          service: "aws-external-anthropic",
        });
        return failure && refusal(failure.status, failure.type, failure.message);
      },
    },
  });
}
