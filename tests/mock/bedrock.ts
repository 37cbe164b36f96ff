/**
 * A loopback Amazon Bedrock Runtime: Converse / ConverseStream and InvokeModel /
 * InvokeModelWithResponseStream with Anthropic's body (InvokeModel of Titan and Cohere
 * embeddings models with theirs, embeddings.ts), streams as binary AWS event-stream
 * frames (eventstream.ts). Every request must carry a SigV4 signature for service `bedrock`
 * that an independent verifier (sigv4.ts) accepts, with the session token when one is
 * configured, or a Bedrock API key as `Authorization: Bearer`. Errors are Bedrock's: status,
 * `x-amzn-errortype` and `{"message"}`.
 *
 * The model id (one percent-encoded path segment) picks the scenario as in upstream.ts; on
 * Bedrock `err429` is a ThrottlingException, `earlyerr` an in-stream `throttlingException`
 * before any content, `errevent` a `modelStreamErrorException` after some content, `cut` a
 * connection reset mid-stream, `echo` quotes the request's credentials back, `sigecho` is
 * AWS's IncompleteSignatureException quoting the `Authorization` header it received.
 */
import { anthropicVersionProblem } from "./claude_body.ts";
import type { PromptCaches } from "./prompt_cache.ts";
import type { Reply } from "./scenario.ts";
import { bedrockEmbeddingsEndpoints } from "./embeddings.ts";
import {
  bedrockError,
  converse,
  CONVERSE_STREAM,
  INVOKE_STREAM,
  onBedrock,
  requestId,
} from "./bedrock_wire.ts";
import { messages } from "./messages.ts";
import { type AwsCredentials, verifySigV4 } from "./sigv4.ts";
import {
  type Call,
  type Endpoint,
  type MockPlatform,
  type MockUpstream,
  startMockUpstream,
} from "./upstream.ts";
import { countTokens, type ErrorReply, type Json } from "./vendor.ts";

export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31";

/** What a `billed` model's invocation metrics add to the Anthropic events' input and output. */
export const BILLED_EXTRA = 100;

/** Bedrock's refusal of a body key it does not know, or of a missing required one. */
const malformed = (what: string) =>
  `Malformed input request: #: ${what}, please reformat your input and try again.`;

/** Anthropic's body as InvokeModel takes it: `anthropic_version`, neither `model` nor `stream`. */
/**
 * Bedrock's own counts of an invocation: the Anthropic events' own, or with `billed` in the
 * model id BILLED_EXTRA more input and output (to tell which the gateway counts).
 */
function invocationCounts(reply: Reply) {
  const extra = reply.model.includes("billed") ? BILLED_EXTRA : 0;
  const { input, output, cacheRead, cacheWrite } = reply.usage;
  return {
    input: input - cacheRead - cacheWrite + extra,
    output: output + extra,
    cacheRead,
    cacheWrite,
  };
}

const invokeAnthropic = onBedrock({
  ...messages,
  validate(body: Json) {
    for (const key of ["model", "stream"]) {
      if (key in body) return malformed(`extraneous key [${key}] is not permitted`);
    }
    const version = anthropicVersionProblem(body, BEDROCK_ANTHROPIC_VERSION);
    if (version) return malformed(version);
    return messages.validate(body);
  },
  // A JSON answer's counts travel in headers.
  headers(reply) {
    const own = { "x-amzn-requestid": requestId() };
    if (!reply) return own;
    const counts = invocationCounts(reply);
    return {
      ...own,
      "x-amzn-bedrock-input-token-count": String(counts.input),
      "x-amzn-bedrock-output-token-count": String(counts.output),
      "x-amzn-bedrock-cache-read-input-token-count": String(counts.cacheRead),
      "x-amzn-bedrock-cache-write-input-token-count": String(counts.cacheWrite),
      "x-amzn-bedrock-invocation-latency": "42",
    };
  },
  // A stream's last Anthropic event carries them.
  events(reply, body) {
    const events = messages.events(reply, body);
    const last = events.at(-1)!;
    const counts = invocationCounts(reply);
    const metrics = {
      inputTokenCount: counts.input,
      outputTokenCount: counts.output,
      invocationLatency: 42,
      firstByteLatency: 21,
      cacheReadInputTokenCount: counts.cacheRead,
      cacheWriteInputTokenCount: counts.cacheWrite,
    };
    const data = { ...(last.data as Json), "amazon-bedrock-invocationMetrics": metrics };
    return [...events.slice(0, -1), { ...last, data }];
  },
});

/**
 * CountTokens with an InvokeModel body: `{"input":{"invokeModel":{"body":"<base64>"}}}` (the
 * AWS SDK's CountTokensCommand shape), the body decoded and checked as InvokeModel checks it;
 * the answer is `{"inputTokens": N}`, N counted from the decoded body.
 */
function countTokensAnswer({ body }: Call): Json | Response {
  const refuse = (what: string) => errorResponse(bedrockError(400, "ValidationException", what));
  const input = body.input as Json | undefined;
  const invoke = input?.invokeModel as Json | undefined;
  if (!input || Object.keys(input).length !== 1 || typeof invoke?.body !== "string") {
    return refuse("input: exactly one of invokeModel or converse is required");
  }
  let text: string;
  let counted: Json;
  try {
    text = new TextDecoder().decode(Uint8Array.fromBase64(invoke.body));
    counted = JSON.parse(text);
  } catch {
    return refuse("input.invokeModel.body: not base64 of a JSON body");
  }
  const invalid = invokeAnthropic.validate(counted);
  if (invalid) return refuse(invalid);
  return { inputTokens: countTokens(text) };
}

const modelOf = (m: RegExpMatchArray) => decodeURIComponent(m[1]);
const operation = (name: string) => new RegExp(`^/model/([^/]+)/${name}$`);

const ENDPOINTS: Endpoint[] = [
  ...bedrockEmbeddingsEndpoints(converse),
  { path: operation("converse"), vendor: converse, model: modelOf, framing: () => undefined },
  {
    path: operation("converse-stream"),
    vendor: converse,
    model: modelOf,
    framing: () => CONVERSE_STREAM,
  },
  { path: operation("invoke"), vendor: invokeAnthropic, model: modelOf, framing: () => undefined },
  {
    path: operation("invoke-with-response-stream"),
    vendor: invokeAnthropic,
    model: modelOf,
    framing: () => INVOKE_STREAM,
  },
  { path: operation("count-tokens"), vendor: invokeAnthropic, answer: countTokensAnswer },
];

export interface BedrockOptions {
  region?: string;
  credentials?: AwsCredentials;
  /** A Bedrock API key accepted as `Authorization: Bearer`. */
  apiKey?: string;
  /** Prompt caching as Bedrock does it (upstream.ts `MockOptions.caching`). */
  caching?: PromptCaches;
}

export const BEDROCK_TEST_CREDENTIALS: Required<AwsCredentials> = {
  accessKeyId: "AKIAMOCKBEDROCK00001",
  secretAccessKey: "mock/bedrock/secret/key/0123456789abcdef",
  sessionToken: "mock-session-token-FwoGZXIvYXdzEJr",
};

function errorResponse(e: ErrorReply): Response {
  return new Response(JSON.stringify(e.body), {
    status: e.status,
    headers: { "content-type": "application/json", ...e.headers },
  });
}

/**
 * AWS's refusal of an `Authorization` header it cannot parse, which quotes the header whole
 * (its `Credential=` and `Signature=`), as AWS words it: `'AKIA…/20150620/us-east-1/
 * cloudformation/aws4_request' not a valid key=value pair (missing equal-sign) in Authorization
 * header: 'AWS4-HMAC-SHA256 Credential=AKIA… /20150620/us-east-1/cloudformation/aws4_request,
 * SignedHeaders=host;x-amz-date, Signature=240c93ba…'.` (aws/aws-sdk-go#289).
 */
function quotedHeader(authorization: string): Response {
  const credential = authorization.match(/Credential=([^,]+)/)![1];
  const message = `'${credential}' not a valid key=value pair (missing equal-sign) in ` +
    `Authorization header: '${authorization}'.`;
  return errorResponse(bedrockError(400, "IncompleteSignatureException", message));
}

export function bedrockPlatform(options: BedrockOptions = {}): MockPlatform {
  const region = options.region ?? "us-east-1";
  const credentials = options.credentials ?? BEDROCK_TEST_CREDENTIALS;
  return {
    endpoints: ENDPOINTS,
    fallback: converse,
    credential: (h) =>
      [h.get("authorization"), h.get("x-amz-security-token")].filter(Boolean).join(" "),
    // The signing key's access key id (its signature changes with every request), or the API key.
    account: (h) => {
      const auth = h.get("authorization") ?? "";
      return auth.match(/Credential=([^/]+)\//)?.[1] ?? auth;
    },
    async intercept(req, url, text) {
      const bearer = req.headers.get("authorization")?.match(/^Bearer (.+)$/)?.[1];
      if (bearer !== undefined) {
        if (bearer === options.apiKey) return undefined;
        return errorResponse(
          bedrockError(
            403,
            "UnrecognizedClientException",
            "Invalid API Key format: Must start with pre-defined prefix",
          ),
        );
      }
      const failure = await verifySigV4(req, url.pathname, text, credentials, {
        region,
        service: "bedrock",
      });
      if (failure) {
        return errorResponse(bedrockError(failure.status, failure.type, failure.message));
      }
      if (url.pathname.includes("sigecho")) return quotedHeader(req.headers.get("authorization")!);
    },
  };
}

/** A Bedrock Runtime on loopback (`url` is its endpoint, e.g. for `BedrockRuntimeClient`). */
export function startMockBedrock(options: BedrockOptions = {}): Promise<MockUpstream> {
  return startMockUpstream({ platform: bedrockPlatform(options), caching: options.caching });
}
