/**
 * Gemini: `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent` (SSE with
 * `?alt=sse`, else a streamed JSON array) and `:countTokens`.
 */
import { ids } from "./ids.ts";
import {
  pieces,
  type Reply,
  SEARCH_CITED,
  SEARCH_RESULTS,
  signature,
  textOf,
  type Usage,
} from "./scenario.ts";
import {
  arrayOf,
  type ErrorDetail,
  type ErrorReply,
  type Json,
  searchTools,
  type Vendor,
} from "./vendor.ts";
import { untyped, type WireEvent } from "./wire.ts";

const isText = (p: Json) => !p.thought;

/** `candidatesTokenCount` excludes thoughts; `thoughtsTokenCount` is absent when zero. */
function usageMetadata(u: Usage) {
  return {
    promptTokenCount: u.input,
    candidatesTokenCount: u.output - u.reasoning,
    totalTokenCount: u.input + u.output,
    cachedContentTokenCount: u.cacheRead,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: u.input }],
    cacheTokensDetails: [{ modality: "TEXT", tokenCount: u.cacheRead }],
    ...(u.reasoning ? { thoughtsTokenCount: u.reasoning } : {}),
  };
}

/**
 * The reply's parts: thought summaries, then text (the first text part carries the thought
 * signature) or one whole function call. Thoughts and text come in `n` fragments each.
 */
function replyParts(reply: Reply, n: number): Json[] {
  const sig = reply.reasoning ? { thoughtSignature: signature("thought", reply.model) } : {};
  const thoughts = pieces(reply.reasoning ?? "", n).map((text) => ({ text, thought: true }));
  const texts = pieces(reply.text ?? "", n).map((text, i) => i ? { text } : { text, ...sig });
  const call = reply.toolCall;
  const calls = call
    ? [{ functionCall: { name: call.name, args: JSON.parse(call.arguments) }, ...sig }]
    : [];
  return [...thoughts, ...texts, ...calls];
}

const utf8 = (s: string) => new TextEncoder().encode(s).length;

/** Gemini cites pages by a redirect URI, titled with the page's domain. */
export const groundingWeb = (i: number, url: string) => ({
  uri: `https://vertexaisearch.cloud.google.com/grounding-api-redirect/MOCK${i}${
    btoa(url).replaceAll("=", "")
  }`,
  title: new URL(url).hostname,
});

/**
 * Google Search grounding as Gemini reports it on the last candidate: the queries, redirect
 * URIs titled by domain, and supports whose segments are UTF-8 byte offsets into the answer.
 */
function groundingMetadata(reply: Reply) {
  const text = reply.text ?? "";
  const at = text.indexOf(SEARCH_CITED);
  return {
    searchEntryPoint: {
      renderedContent:
        `<div class="container"><a class="chip" href="https://www.google.com/search?q=${
          encodeURIComponent(reply.search?.query ?? "")
        }">${reply.search?.query ?? ""}</a></div>\n`,
    },
    groundingChunks: SEARCH_RESULTS.map((r, i) => ({ web: groundingWeb(i, r.url) })),
    groundingSupports: at < 0 ? [] : [{
      segment: {
        startIndex: utf8(text.slice(0, at)),
        endIndex: utf8(text.slice(0, at + SEARCH_CITED.length)),
        text: SEARCH_CITED,
      },
      groundingChunkIndices: [0],
    }],
    webSearchQueries: [reply.search?.query ?? ""],
  };
}

/** How a long decode's hop ends (long_decode.ts); a whole answer ends with STOP. */
const HOP_END = { continue: "CONTINUATION", max_tokens: "MAX_TOKENS", stop: "STOP" } as const;

function response(reply: Reply, responseId: string, parts: Json[], last: boolean) {
  const u = reply.usage;
  const token = last && reply.hop?.token;
  return {
    candidates: [{
      content: { parts, role: "model" },
      ...(last
        ? { finishReason: reply.finish?.toUpperCase() ?? HOP_END[reply.hop?.end ?? "stop"] }
        : {}),
      ...(token ? { continuationToken: token } : {}),
      ...(last && reply.search ? { groundingMetadata: groundingMetadata(reply) } : {}),
      index: 0,
    }],
    usageMetadata: last
      ? usageMetadata(u)
      : { promptTokenCount: u.input, totalTokenCount: u.input },
    modelVersion: reply.model,
    responseId,
  };
}

/** One chunk per part; the last one has `finishReason` and the full usage. */
function geminiEvents(reply: Reply): WireEvent[] {
  const id = ids.geminiResponse();
  const parts = replyParts(reply, reply.textPieces);
  return parts.map((p, i) => untyped(response(reply, id, [p], i === parts.length - 1), true));
}

const ERRORS: Record<number, [status: string, message: string]> = {
  400: ["INVALID_ARGUMENT", "Request contains an invalid argument."],
  404: ["NOT_FOUND", "models/mock-missing is not found for API version v1beta."],
  429: [
    "RESOURCE_EXHAUSTED",
    "You exceeded your current quota, please check your plan and billing details. For more " +
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
  ],
  500: [
    "INTERNAL",
    "An internal error has occurred. Please retry or report in " +
    "https://developers.generativeai.google/guide/troubleshooting",
  ],
  503: ["UNAVAILABLE", "The model is overloaded. Please try again later."],
};

const QUOTA_DETAILS = [
  {
    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
    violations: [{
      quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
      quotaId: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
    }],
  },
  {
    "@type": "type.googleapis.com/google.rpc.Help",
    links: [{
      description: "Learn more about Gemini API quotas",
      url: "https://ai.google.dev/gemini-api/docs/rate-limits",
    }],
  },
  { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "1s" },
];

/** Gemini never sends 529; its overload answer is a 503 UNAVAILABLE. */
function geminiError(requested: number, detail?: ErrorDetail): ErrorReply {
  const code = requested === 529 ? 503 : requested;
  const [status, message] = ERRORS[code] ?? ERRORS[500];
  const details = code === 429 ? { details: QUOTA_DETAILS } : {};
  return {
    status: code,
    body: { error: { code, message: detail?.message ?? message, status, ...details } },
  };
}

function functionResponseText(part: Json): string {
  const response = part.functionResponse?.response ?? {};
  const output = response.output ?? response.error ?? response;
  return typeof output === "string" ? output : JSON.stringify(output);
}

export const generateContent: Vendor = {
  name: "generate-content",
  jsonContentType: "application/json; charset=UTF-8",
  turn(body) {
    const contents = arrayOf(body.contents);
    const isUser = (c: Json) => c?.role === "user" || c?.role === undefined;
    const userText = textOf(contents.findLast(isUser)?.parts, isText);
    const result = arrayOf(contents.at(-1)?.parts).findLast((p) => p?.functionResponse);
    return result ? { userText, toolResult: functionResponseText(result) } : { userText };
  },
  toolNames: (body) =>
    arrayOf(body.tools).flatMap((t) => arrayOf(t?.functionDeclarations)).map((d) => d?.name)
      .filter(Boolean),
  hostedSearch: (body) => searchTools(arrayOf(body.tools), (t) => t?.googleSearch !== undefined),
  validate: (body) =>
    Array.isArray(body.contents)
      ? undefined
      : "* GenerateContentRequest.contents: contents is not specified",
  json: (reply) => response(reply, ids.geminiResponse(), replyParts(reply, 1), true),
  events: geminiEvents,
  error: geminiError,
  streamError: (status, detail) => untyped(geminiError(status, detail).body),
  headers: () => ({ server: "scaffolding on HTTPServer2" }),
  badJson: "Invalid JSON payload received. Unexpected token.",
  notFound: (method, path) => `Method not found: ${method} ${path}`,
  longDecode: {
    budget: (body) => body.generationConfig?.maxOutputTokens,
    token: (body) => body.continuationToken,
    request: ({ continuationToken: _, ...rest }) => rest,
    unaryLimit: true,
  },
};
