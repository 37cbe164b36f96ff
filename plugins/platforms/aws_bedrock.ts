/**
 * Amazon Bedrock Runtime as a platform (`platform: aws-bedrock`): the `aws:` block names the
 * region and, for SigV4, an access key pair (with an optional session token); without a pair,
 * the provider's `api_key` is a Bedrock API key sent as a Bearer token. Calls go to
 * `https://bedrock-runtime.<region>.amazonaws.com` unless `base_url` names another endpoint (a
 * VPC endpoint); SigV4 signs the host that is called. Errors read as Bedrock names them
 * (bedrock_errors.ts). It carries Bedrock's own Converse format (docs/providers.md).
 */
import { z } from "zod";
import { GatewayError } from "../../src/contract/errors.ts";
import type { Platform } from "../../src/contract/platform.ts";
import { conversePath, unsafeModelId } from "../converse/codec.ts";
import { FAMILY } from "../converse/common.ts";
import { readBedrockError } from "./bedrock_errors.ts";
import { type AwsCredentials, signAwsRequest } from "./sigv4.ts";
import { jsonObjectOf } from "../shared.ts";

const settings = z.strictObject({
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, "an AWS region such as us-east-1"),
  access_key_id: z.string().min(1).optional(),
  secret_access_key: z.string().min(1).optional(),
  session_token: z.string().min(1).optional(),
}).refine(
  (s) => (s.access_key_id === undefined) === (s.secret_access_key === undefined),
  "access_key_id and secret_access_key go together (or neither, with api_key a Bedrock API key)",
).refine(
  (s) => s.session_token === undefined || s.access_key_id !== undefined,
  "session_token needs access_key_id and secret_access_key",
);
type AwsSettings = z.infer<typeof settings>;

const SERVICE = "bedrock";

function keyPair(s: AwsSettings): AwsCredentials | undefined {
  if (s.access_key_id === undefined || s.secret_access_key === undefined) return undefined;
  return {
    accessKeyId: s.access_key_id,
    secretAccessKey: s.secret_access_key,
    ...(s.session_token ? { sessionToken: s.session_token } : {}),
  };
}

export const awsBedrockPlatform: Platform<AwsSettings> = {
  id: "aws-bedrock",
  system: "aws.bedrock",
  apis: ["converse"],
  settings: { key: "aws", schema: settings },
  defaultBaseUrl: (s) => `https://bedrock-runtime.${s.region}.amazonaws.com`,
  url: ({ base_url }, { model, stream }) => base_url + conversePath(model, stream),
  credential({ name, settings: s }, ctx) {
    const pair = keyPair(s);
    if (pair) {
      ctx.secret(pair.secretAccessKey);
      if (pair.sessionToken) ctx.secret(pair.sessionToken);
    }
    const scope = { region: s.region, service: SERVICE };
    return {
      async authorize(req, key) {
        if (pair) {
          const { method, headers, body } = req;
          const signed = await signAwsRequest(req.url.href, { method, headers, body }, pair, scope);
          for (const [k, v] of signed) req.headers.set(k, v);
        } else if (key) req.headers.set("authorization", `Bearer ${key}`);
        else {
          throw new GatewayError(
            500,
            "authentication",
            `provider ${name} has no AWS key pair in aws: and no api_key (a Bedrock API key)`,
          );
        }
      },
    };
  },
  readError(_status, headers, body) {
    const json = jsonObjectOf(body) ?? {};
    const own = readBedrockError(json, headers.get("x-amzn-errortype"));
    return own && { kind: own.kind, message: own.message };
  },
  // Converse's reasoning signatures are Converse's own, whatever the model (docs/providers.md).
  family: (_model, api) => api === "converse" ? FAMILY : undefined,
  unsafeModel: (model) => {
    const why = unsafeModelId(model);
    return why && `cannot be sent in a Bedrock URL: ${why}`;
  },
};
