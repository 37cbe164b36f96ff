/**
 * Amazon Bedrock Runtime (`platform: aws-bedrock`). Anthropic's Messages body goes through
 * InvokeModel (`/model/{id}/invoke`) and InvokeModelWithResponseStream
 * (`/invoke-with-response-stream`): Bedrock's `anthropic_version` in the body instead of the
 * header, `anthropic-beta` moved into `anthropic_beta`, neither `model` nor `stream` (the
 * operation says whether it streams). Its streams are AWS event-stream frames whose `chunk`
 * payloads hold one Anthropic stream event each, re-framed here as the format's SSE. Calls are
 * signed with SigV4 (service `bedrock`), or carry a Bedrock API key as a Bearer. Anthropic's
 * token counting goes to CountTokens (`/model/{id}/count-tokens`). It carries
 * Bedrock's own Converse format too (`api: converse`, plugins/converse/), as that plugin has it.
 */
import { z } from "zod";
import { badRequest } from "../../src/kit/errors.ts";
import type { UpstreamFraming } from "../../src/kit/framing.ts";
import type { Platform, PlatformCall } from "../../src/kit/platform.ts";
import {
  bedrockError,
  countTokensAnswer,
  invocationUsage,
  invokeStreamFraming,
  modelIdSegment,
  unsafeModelName,
} from "./bedrock_wire.ts";
import { type CloudClaude, toCloudBody } from "./claude_body.ts";
import { signAwsRequest } from "./sigv4.ts";

/** How InvokeModel carries Anthropic's Messages body (claude_body.ts). */
export const BEDROCK_CLAUDE: CloudClaude = {
  version: "bedrock-2023-05-31",
  betasInBody: true,
  streamInUrl: true,
};

const settings = z.strictObject({
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, "an AWS region such as us-east-1"),
  /** With `secret_access_key`: calls are signed (SigV4); without: `api_key` is a Bearer. */
  access_key_id: z.string().min(1).optional(),
  secret_access_key: z.string().min(1).optional(),
  /** Temporary credentials (STS): sent as `x-amz-security-token`, and signed. */
  session_token: z.string().min(1).optional(),
}).refine((a) => (a.access_key_id === undefined) === (a.secret_access_key === undefined), {
  message: "give access_key_id and secret_access_key together",
  path: ["secret_access_key"],
}).refine((a) => a.session_token === undefined || a.access_key_id !== undefined, {
  message: "a session token goes with an access key pair",
  path: ["session_token"],
});
type AwsSettings = z.infer<typeof settings>;

/** What a wire format is on Bedrock: its operations (JSON, stream), body and stream framing. */
interface BedrockApi {
  operations: [json: string, stream: string];
  adjust?(body: Record<string, unknown>, headers: Headers): Record<string, unknown>;
  framing(inner: UpstreamFraming): UpstreamFraming;
  /** CountTokens' `input` for an adjusted body; absent: no token counting. */
  countInput?(body: Record<string, unknown>): Record<string, unknown>;
}

/** Anthropic's Messages through InvokeModel; Converse. */
const APIS: Record<string, BedrockApi> = {
  messages: {
    operations: ["invoke", "invoke-with-response-stream"],
    // The version and beta headers move into the body; neither model nor stream stay.
    adjust: (body, headers) => toCloudBody(body, headers, BEDROCK_CLAUDE),
    framing: invokeStreamFraming,
    countInput: invokeModelTokens,
  },
  // Bedrock's own format: its body and event stream are the converse plugin's.
  converse: { operations: ["converse", "converse-stream"], framing: (inner) => inner },
};

/** `POST /model/{id}/…`: the id (with `:`, or an ARN with `/`) as one encoded path segment. */
function url(base: string, api: string, { model, operation, stream }: PlatformCall): string {
  const { operations: [json, streamed], countInput } = APIS[api];
  if (operation === "count_tokens" && !countInput) {
    throw badRequest(`token counting through ${api} is not served on aws-bedrock`, "model");
  }
  const op = operation === "count_tokens" ? "count-tokens" : stream ? streamed : json;
  return `${base}/model/${modelIdSegment(model)}/${op}`;
}

/**
 * An InvokeModel body as CountTokens counts it: base64 in `invokeModel.body`. InvokeModel's
 * Claude body requires `max_tokens`, which a token count request lacks; it does not change the
 * count, so the smallest value the body allows is set (above a thinking budget).
 */
function invokeModelTokens(body: Record<string, unknown>): Record<string, unknown> {
  const budget = (body.thinking as { budget_tokens?: unknown } | undefined)?.budget_tokens;
  const least = typeof budget === "number" ? budget + 1 : 1;
  const counted = { ...body, max_tokens: body.max_tokens ?? least };
  return { invokeModel: { body: new TextEncoder().encode(JSON.stringify(counted)).toBase64() } };
}

export const bedrockPlatform: Platform<AwsSettings> = {
  id: "aws-bedrock",
  system: "aws.bedrock",
  apis: Object.keys(APIS),
  settings: { key: "aws", schema: settings },
  address: {
    url: ({ base_url, api }, call) => url(base_url, api, call),
    defaultBaseUrl: ({ region }) => `https://bedrock-runtime.${region}.amazonaws.com`,
  },
  credential({ settings: aws }, ctx) {
    const { access_key_id, secret_access_key, session_token, region } = aws;
    if (access_key_id === undefined || secret_access_key === undefined) {
      return {
        authorize(req, key) {
          if (key) req.headers.set("authorization", `Bearer ${key}`);
        },
      };
    }
    ctx.secret(secret_access_key);
    // Not a secret by itself, but it names the AWS identity, and errors quote it (`Credential=`).
    ctx.secret(access_key_id);
    if (session_token) ctx.secret(session_token);
    const credentials = {
      accessKeyId: access_key_id,
      secretAccessKey: secret_access_key,
      sessionToken: session_token,
    };
    return {
      async authorize(req) {
        req.headers = await signAwsRequest(req.url.href, req, credentials, {
          region,
          service: "bedrock",
        });
      },
    };
  },
  body: {
    request(body, headers, { operation }, { api }) {
      const { adjust, countInput } = APIS[api];
      const adjusted = adjust?.(body, headers) ?? body;
      return operation === "count_tokens" && countInput
        ? { input: countInput(adjusted) }
        : adjusted;
    },
    answer: (json, { operation }) =>
      operation === "count_tokens" ? countTokensAnswer(json) : undefined,
  },
  framing: (inner, _call, { api }) => APIS[api].framing(inner),
  usage: invocationUsage,
  readError: (status, headers, body) => bedrockError(status, headers, body),
  models: { unsafe: unsafeModelName },
};
