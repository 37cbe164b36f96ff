/**
 * Vertex AI's model addresses and Claude body, both ways: built for the gateway's calls to
 * Vertex (the gcp-vertex platform, gcp_vertex.ts) and read from clients that call the gateway as
 * they would call Vertex (plugins/vertex/). A model is
 * `/{v1|v1beta1}/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}`,
 * followed by `:{action}`; the publisher says the wire format its models speak.
 */
import type { Operation } from "../../src/kit/platform.ts";
import type { CloudClaude } from "./claude_body.ts";

/** How rawPredict carries Anthropic's Messages body: Vertex's version, the betas as headers. */
export const VERTEX_CLAUDE: CloudClaude = {
  version: "vertex-2023-10-16",
  betasInBody: false,
  streamInUrl: false,
};

/** A publisher's models on Vertex: the wire they speak and their actions. */
export interface Publisher {
  /** The wire format (`api:`) of its models. */
  api: string;
  /** The action that answers in one JSON document, and the streaming one. */
  json: string;
  stream: string;
  /** The query that makes its stream server-sent events (without it Gemini's is a JSON array). */
  sse?: string;
  /** The fixed model whose `json` action counts tokens (the body names the model), if any. */
  counter?: string;
}

export const PUBLISHERS: Readonly<Record<string, Publisher>> = {
  google: {
    api: "generate-content",
    json: "generateContent",
    stream: "streamGenerateContent",
    sse: "?alt=sse",
  },
  anthropic: {
    api: "messages",
    json: "rawPredict",
    stream: "streamRawPredict",
    counter: "count-tokens",
  },
};

/** The publisher whose models speak `api`. */
export function publisherOf(api: string): [name: string, Publisher] {
  const found = Object.entries(PUBLISHERS).find(([, p]) => p.api === api);
  if (!found) throw new Error(`Vertex AI serves no ${api} models`);
  return found;
}

/**
 * The path of a call, from the model's segment (already checked to be one safe segment):
 * the publisher's JSON or streaming action (a stream with its `sse` query unless `query` says
 * otherwise: Gemini's JSON array stream has none), or token counting at the publisher's counter.
 */
export function vertexPath(
  gcp: { project: string; location: string },
  api: string,
  model: string,
  operation: Operation,
  stream: boolean,
  query?: string,
): string {
  const [name, publisher] = publisherOf(api);
  const at = `/v1/projects/${gcp.project}/locations/${gcp.location}/publishers/${name}/models/`;
  if (operation === "count_tokens" && publisher.counter) {
    return `${at}${publisher.counter}:${publisher.json}`;
  }
  // Claude's model ids carry their date after an `@`, which Vertex takes as is.
  const id = encodeURIComponent(model).replaceAll("%40", "@");
  if (!stream) return `${at}${id}:${publisher.json}`;
  return `${at}${id}:${publisher.stream}${query ?? publisher.sse ?? ""}`;
}

/**
 * The model paths clients send for `publisher` (`@google/genai` uses v1beta1, the Anthropic
 * Vertex SDK and Claude Code v1; genai's express mode leaves out project and location), `model`
 * being the last segment's pattern. Project and location are not captured: the model alone
 * routes.
 */
export const vertexModelPath = (publisher: string, model: string): RegExp =>
  new RegExp(
    `^/v1(?:beta1)?/(?:projects/[^/]+/locations/[^/]+/)?publishers/${publisher}/models/${model}$`,
  );

/** Any publisher's model path: the publisher and the last segment captured. */
const MODEL_PATH = vertexModelPath("([^/]+)", "([^/]+)");

/** A client's call as its path names it: the publisher, the model segment (raw) and action. */
export interface VertexCall {
  publisher: string;
  /** The model's path segment, not yet percent-decoded. */
  segment: string;
  action: string;
}

/** The publisher, model segment and action of a model path (`vertexModelPath`). */
export function readVertexPath(pathname: string): VertexCall {
  const [, publisher, target] = pathname.match(MODEL_PATH) ?? ["", "", ""];
  const colon = target.lastIndexOf(":");
  return colon < 0
    ? { publisher, segment: target, action: "" }
    : { publisher, segment: target.slice(0, colon), action: target.slice(colon + 1) };
}
