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
 * connection reset mid-stream, `echo` quotes the request's credentials back.
 */
import { anthropicVersionProblem } from "./claude_body.ts";
import type { PromptCaches } from "./prompt_cache.ts";
import type { Reply } from "./scenario.ts";
import { converseFormat } from "./converse.ts";
import { bedrockEmbeddingsEndpoints } from "./embeddings.ts";
import { eventFrame, exceptionFrame } from "./eventstream.ts";
import { messages } from "./messages.ts";
import { type AwsCredentials, verifySigV4 } from "./sigv4.ts";
import {
  type Call,
  type Endpoint,
  type MockPlatform,
  type MockUpstream,
  startMockUpstream,
} from "./upstream.ts";
import {
  countTokens,
  type ErrorDetail,
  type ErrorReply,
  type Json,
  type Vendor,
} from "./vendor.ts";
import type { Framing, WireEvent } from "./wire.ts";

export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31";

/** Bedrock's exception name and default message for a scenario status. */
const ERRORS: Record<number, [status: number, type: string, message: string]> = {
  400: [
    400,
    "ValidationException",
    "Malformed input request, please reformat your input and try again.",
  ],
  401: [
    403,
    "UnrecognizedClientException",
    "The security token included in the request is invalid.",
  ],
  403: [
    403,
    "AccessDeniedException",
    "You don't have access to the model with the specified model ID.",
  ],
  404: [
    404,
    "ResourceNotFoundException",
    "Could not resolve the foundation model from the provided model identifier.",
  ],
  408: [
    408,
    "ModelTimeoutException",
    "Model has timed out in processing the request. Try your request again.",
  ],
  424: [424, "ModelErrorException", "The model returned an error. Try your request again."],
  429: [429, "ThrottlingException", "Too many requests, please wait before trying again."],
  500: [
    500,
    "InternalServerException",
    "The system encountered an unexpected error during processing. Try your request again.",
  ],
  502: [503, "ServiceUnavailableException", "Bedrock is unable to process your request."],
  503: [503, "ServiceUnavailableException", "Bedrock is unable to process your request."],
  529: [503, "ServiceUnavailableException", "Bedrock is unable to process your request."],
};

const requestId = () => crypto.randomUUID();

/** A Bedrock error by exception name: `x-amzn-errortype` carries it, the body its message. */
export function bedrockError(status: number, type: string, message: string): ErrorReply {
  return {
    status,
    body: { message },
    headers: {
      "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
      "x-amzn-requestid": requestId(),
    },
  };
}

function errorFor(status: number, detail?: ErrorDetail): ErrorReply {
  const [code, type, message] = ERRORS[status] ?? ERRORS[500];
  return bedrockError(code, type, detail?.message ?? message);
}

/**
 * In-stream exceptions: an overloaded (529) or rate-limited stream fails with
 * `throttlingException`, anything else with `modelStreamErrorException`. The event name ends
 * in `Exception`, which is how the framings tell an exception frame from an event frame.
 */
function streamException(status: number, detail?: ErrorDetail): WireEvent {
  if (status === 429 || status === 529) {
    return { event: "throttlingException", data: { message: detail?.message ?? ERRORS[429][2] } };
  }
  const message = detail?.message ?? "The model returned an error while streaming.";
  return {
    event: "modelStreamErrorException",
    data: { message, originalStatusCode: status, originalMessage: message },
  };
}

const isException = (e: WireEvent) => e.event?.endsWith("Exception") ?? false;

/** ConverseStream: one frame per event, named by `:event-type`. */
const CONVERSE_STREAM: Framing = {
  contentType: "application/vnd.amazon.eventstream",
  encode: (e) => isException(e) ? exceptionFrame(e.event!, e.data) : eventFrame(e.event!, e.data),
  end: "",
};

/** InvokeModelWithResponseStream: `chunk` frames whose `bytes` hold one Anthropic event. */
const INVOKE_STREAM: Framing = {
  contentType: "application/vnd.amazon.eventstream",
  encode: (e) =>
    isException(e) ? exceptionFrame(e.event!, e.data) : eventFrame("chunk", {
      bytes: btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(e.data)))),
    }),
  end: "",
};

/** A vendor's body shapes behind Bedrock's errors and headers. */
function onBedrock(
  format:
    & Omit<Vendor, "error" | "streamError" | "headers" | "badJson" | "notFound">
    & Partial<Pick<Vendor, "headers">>,
): Vendor {
  return {
    ...format,
    error: errorFor,
    streamError: streamException,
    headers: format.headers ?? (() => ({ "x-amzn-requestid": requestId() })),
    badJson: "Malformed input request, please reformat your input and try again.",
    notFound: () => "UnknownOperationException",
  };
}

const converse = onBedrock(converseFormat);

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
      return failure && errorResponse(bedrockError(failure.status, failure.type, failure.message));
    },
  };
}

/** A Bedrock Runtime on loopback (`url` is its endpoint, e.g. for `BedrockRuntimeClient`). */
export function startMockBedrock(options: BedrockOptions = {}): Promise<MockUpstream> {
  return startMockUpstream({ platform: bedrockPlatform(options), caching: options.caching });
}
