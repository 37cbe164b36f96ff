/**
 * Claude Platform on AWS (`platform: aws-anthropic`): Anthropic's own Messages API sold through
 * AWS, at `https://aws-external-anthropic.{region}.api.aws`. The body, streams, model ids,
 * usage and errors are Anthropic's; what differs is the credential — an AWS Signature V4
 * (service `aws-external-anthropic`) from the `aws:` block's keys, or a workspace API key sent
 * as `Authorization: Bearer` (never `x-api-key`) — and the `anthropic-workspace-id` header every
 * call carries, as the official `@anthropic-ai/aws-sdk` sends them.
 */
import { z } from "zod";
import type { Platform } from "../../src/kit/platform.ts";
import { bedrockError } from "./bedrock_wire.ts";
import { AWS_KEYS, awsCredential, checkKeys } from "./aws_keys.ts";

const settings = z.strictObject({
  ...AWS_KEYS,
  /** The workspace every call names (`anthropic-workspace-id`). */
  workspace_id: z.string().min(1),
}).superRefine(checkKeys);
type AwsAnthropicSettings = z.infer<typeof settings>;

/** The service name its SigV4 signatures are scoped to. */
const SERVICE = "aws-external-anthropic";
/** The API version sent when the client named none (converted calls), as Anthropic's own. */
const DEFAULT_VERSION = "2023-06-01";

export const awsAnthropicPlatform: Platform<AwsAnthropicSettings> = {
  id: "aws-anthropic",
  // Anthropic's API, as the official client names its provider.
  system: "anthropic",
  apis: ["messages"],
  settings: { key: "aws", schema: settings },
  address: {
    url: ({ base_url }, { operation }) =>
      `${base_url}/v1/messages${operation === "count_tokens" ? "/count_tokens" : ""}`,
    defaultBaseUrl: ({ region }) => `https://aws-external-anthropic.${region}.api.aws`,
  },
  credential: ({ settings: aws }, ctx) =>
    // The workspace, and Anthropic's API version, signed with the call.
    awsCredential(aws, SERVICE, ctx, (headers) => {
      headers.set("anthropic-workspace-id", aws.workspace_id);
      if (!headers.has("anthropic-version")) headers.set("anthropic-version", DEFAULT_VERSION);
    }),
  // Anthropic's own errors are the format's to read; AWS's front door (a refused signature)
  // answers as AWS services do.
  readError: (status, headers, body) =>
    headers.has("x-amzn-errortype") ? bedrockError(status, headers, body) : undefined,
};
