/**
 * Bedrock's errors and event-stream framings, for the Bedrock mock (bedrock.ts) and for the
 * vendors' mock (upstream.ts), which serves Converse at Bedrock's paths without SigV4, as a
 * Converse provider with a Bedrock API key (or behind a VPC endpoint) is called.
 */
import { converseFormat } from "./converse.ts";
import { eventFrame, exceptionFrame } from "./eventstream.ts";
import type { ErrorDetail, ErrorReply, Vendor } from "./vendor.ts";
import { type Framing, payload, type WireEvent } from "./wire.ts";

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

export const requestId = () => crypto.randomUUID();

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
export const CONVERSE_STREAM: Framing = {
  contentType: "application/vnd.amazon.eventstream",
  encode: (e) => isException(e) ? exceptionFrame(e.event!, e.data) : eventFrame(e.event!, e.data),
  end: "",
};

/** InvokeModelWithResponseStream: `chunk` frames whose `bytes` hold one Anthropic event. */
export const INVOKE_STREAM: Framing = {
  contentType: "application/vnd.amazon.eventstream",
  encode: (e) =>
    isException(e) ? exceptionFrame(e.event!, e.data) : eventFrame("chunk", {
      bytes: btoa(String.fromCharCode(...new TextEncoder().encode(payload(e)))),
    }),
  end: "",
};

/** A vendor's body shapes behind Bedrock's errors and headers. */
export function onBedrock(
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

export const converse = onBedrock(converseFormat);
