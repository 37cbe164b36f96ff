/**
 * A mock model provider speaking the four vendor wire formats on loopback, used by the
 * gateway's tests as its upstream. Words in the model name (the JSON `model`, or Gemini's path
 * segment) pick the scenario, see scenario.ts: text (default), tool, think, cut, stall, slow,
 * err400, err429, err500, err529, and the faults (hang, silent, cutmid, close, closemid,
 * badjson, garbled, errevent, ctype, huge, echo), and Google's long decode on the Gemini formats (longN,
 * long_decode.ts). They combine: `think-tool` reasons, then calls a tool.
 * Auth is not checked; Anthropic requests without `max_tokens` get Anthropic's 400.
 *
 * Endpoints:
 * - POST /v1/chat/completions                         OpenAI Chat (JSON or `data:` SSE + [DONE])
 * - POST /v1/responses                                OpenAI Responses (JSON or `event:` SSE)
 * - GET  /v1/responses (WebSocket upgrade)            Responses events, one JSON per frame
 * - POST /v1/responses/compact | /input_tokens
 * - POST /v1/messages | /v1/messages/count_tokens     Anthropic (JSON or `event:` SSE)
 * - POST /v1beta/models/{model}:generateContent | :streamGenerateContent[?alt=sse] | :countTokens
 * - POST /v1/embeddings, /v1beta/models/{model}:embedContent | :batchEmbedContents (embeddings.ts)
 * - GET  /v1/models (OpenAI's, or Anthropic's with x-api-key), GET /v1beta/models: model_lists.ts
 * - POST /v1beta/interactions                         Gemini Interactions (JSON or `event:` SSE)
 * - POST /model/{id}/converse | /converse-stream      Bedrock Converse (JSON or AWS event stream)
 * - GET|DELETE /v1beta/interactions/{id}              an interaction the mock answered
 */
import { converse, CONVERSE_STREAM } from "./bedrock_wire.ts";
import { chat } from "./chat.ts";
import { geminiEmbeddingsEndpoints, openAiEmbeddingsEndpoint } from "./embeddings.ts";
import { generateContent } from "./generate-content.ts";
import { interactionResource, interactions } from "./interactions.ts";
import { messages } from "./messages.ts";
import { type ListedModels, listedModels, modelList } from "./model_lists.ts";
import { compactJson, responses } from "./responses.ts";
import type { PromptCaches } from "./prompt_cache.ts";
import { parseScenario, type Scenario, STALL_MS } from "./scenario.ts";
import {
  countTokens,
  credentialOf,
  echoMessage,
  type ErrorDetail,
  type Json,
  replyFor,
  type Vendor,
} from "./vendor.ts";
import { ResponsesSocket } from "./websocket.ts";
import { hopReply, planHop } from "./long_decode.ts";
import {
  CHAT_SSE,
  CUT,
  type Faults,
  type Framing,
  GEMINI_ARRAY,
  GEMINI_SSE,
  rawFraming,
  sleep,
  streamBody,
  TYPED_SSE,
  untyped,
  type WireEvent,
} from "./wire.ts";

export { SLOW_MS, STALL_MS, TOKENS, usageFor } from "./scenario.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  search: string;
  headers: Record<string, string>;
  body: string;
  json?: Json;
}

export interface MockUpstream {
  /** "http://127.0.0.1:PORT" */
  url: string;
  /** Every request received, in order (WebSocket upgrades included, with body ""). */
  requests: RecordedRequest[];
  /** Text frames received on WebSocket connections. */
  wsFrames: string[];
  /** HTTP requests whose client went away before the mock finished streaming. */
  aborted: number;
  /** The models its list endpoints report (changeable). */
  models: ListedModels;
  /** Its list endpoints answer 503 while set. */
  failModelLists: boolean;
  /** Shuts the server down, closing every socket and clearing every timer. */
  close(): Promise<void>;
}

export interface MockOptions {
  /**
   * Keep every request in `requests` (default). The benchmark turns it off: a mock that keeps
   * hundreds of thousands of requests slows down, and the servers measured last would pay.
   */
  record?: boolean;
  /** Serve a cloud platform's paths and checks instead of the vendors' own (bedrock.ts, …). */
  platform?: MockPlatform;
  /**
   * Cache prompts as each vendor documents it (prompt_cache.ts): usage then reports what was
   * read and written, and breakpoints a vendor refuses are its 400. Absent: the fixed TOKENS.
   */
  caching?: PromptCaches;
}

/** A cloud platform in front of the vendor formats: its endpoints, auth and error envelope. */
export interface MockPlatform {
  endpoints: Endpoint[];
  /** The vendor whose envelope an unknown path gets. */
  fallback: Vendor;
  /** Answers a request itself (an auth failure, a token endpoint), or leaves it to the endpoints. */
  intercept?(
    req: Request,
    url: URL,
    text: string,
  ): Promise<Response | undefined> | Response | undefined;
  /** What `echo` quotes (default: the vendors' credential headers). */
  credential?(headers: Headers): string;
  /** The account a request bills, whose prompt cache it uses (default: its credential). */
  account?(headers: Headers, url: URL): string;
}

export async function startMockUpstream(options: MockOptions = {}): Promise<MockUpstream> {
  const upstream = new Upstream(options.record ?? true, options.platform, options.caching);
  await upstream.listen();
  return upstream;
}

/** What an endpoint handler sees of a request. */
export interface Call {
  body: Json;
  text: string;
  url: URL;
  model: string;
  /** The credential header's value as received (echoed by `echo` errors). */
  credential: string;
  /** The provider account it bills (its prompt cache's). */
  account: string;
}

/** An nginx-like error page or plain text, for `errNNNhtml` / `errNNNtext`. */
function rawError(status: number, kind: "html" | "text", echo: string): Response {
  const body = kind === "html"
    ? `<html>\r\n<head><title>${status} Bad Gateway</title></head>\r\n<body>\r\n` +
      `<center><h1>${status} Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n` +
      `${echo}</body>\r\n</html>\r\n`
    : `upstream connect error or disconnect/reset before headers. ${echo}`;
  const type = kind === "html" ? "text/html" : "text/plain";
  return new Response(body, { status, headers: { "content-type": type } });
}

/**
 * A generation endpoint (its streaming framing, if this call streams) or a plain JSON one (its
 * answer's JSON, or a whole Response such as the platform's refusal).
 */
export type Endpoint =
  & { path: RegExp; vendor: Vendor; model?: (match: RegExpMatchArray) => string }
  & ({ framing: (call: Call) => Framing | undefined } | {
    answer: (call: Call) => unknown | Promise<unknown>;
  });

export const bodyStream = (framing: Framing) => (call: Call) =>
  call.body.stream === true ? framing : undefined;
/** A model named by a path segment (Gemini's, Converse's). */
const geminiModel = (m: RegExpMatchArray) => decodeURIComponent(m[1]);

const ENDPOINTS: Endpoint[] = [
  { path: /^\/v1\/chat\/completions$/, vendor: chat, framing: bodyStream(CHAT_SSE) },
  { path: /^\/v1\/responses$/, vendor: responses, framing: bodyStream(TYPED_SSE) },
  { path: /^\/v1\/responses\/compact$/, vendor: responses, answer: (c) => compactJson(c.body) },
  {
    path: /^\/v1\/responses\/input_tokens$/,
    vendor: responses,
    answer: (c) => ({ object: "response.input_tokens", input_tokens: countTokens(c.text) }),
  },
  { path: /^\/v1\/messages$/, vendor: messages, framing: bodyStream(TYPED_SSE) },
  {
    path: /^\/v1\/messages\/count_tokens$/,
    vendor: messages,
    answer: (c) => ({ input_tokens: countTokens(c.text) }),
  },
  {
    path: /^\/v1beta\/models\/([^/:]+):generateContent$/,
    vendor: generateContent,
    model: geminiModel,
    framing: () => undefined,
  },
  {
    path: /^\/v1beta\/models\/([^/:]+):streamGenerateContent$/,
    vendor: generateContent,
    model: geminiModel,
    framing: (c) => c.url.searchParams.get("alt") === "sse" ? GEMINI_SSE : GEMINI_ARRAY,
  },
  { path: /^\/v1beta\/interactions$/, vendor: interactions, framing: bodyStream(TYPED_SSE) },
  openAiEmbeddingsEndpoint(/^\/v1\/embeddings$/, chat),
  ...geminiEmbeddingsEndpoints(generateContent),
  // Converse at Bedrock's paths, the model id one percent-encoded segment (no SigV4 here).
  {
    path: /^\/model\/([^/]+)\/converse$/,
    vendor: converse,
    model: geminiModel,
    framing: () => undefined,
  },
  {
    path: /^\/model\/([^/]+)\/converse-stream$/,
    vendor: converse,
    model: geminiModel,
    framing: () => CONVERSE_STREAM,
  },
  {
    path: /^\/v1beta\/models\/([^/:]+):countTokens$/,
    vendor: generateContent,
    model: geminiModel,
    answer: (c) => {
      const n = countTokens(c.text);
      return { totalTokens: n, promptTokensDetails: [{ modality: "TEXT", tokenCount: n }] };
    },
  },
];

/** The vendor whose error envelope an unknown path gets. */
function vendorForPath(path: string): Vendor {
  if (path.startsWith("/v1beta/")) return generateContent;
  return path.startsWith("/v1/messages") ? messages : chat;
}

function parseJson(text: string): Json {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);

function jsonResponse(vendor: Vendor, body: unknown, status = 200, headers = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": vendor.jsonContentType, ...vendor.headers(), ...headers },
  });
}

function errorResponse(vendor: Vendor, status: number, detail?: ErrorDetail): Response {
  const e = vendor.error(status, detail);
  return jsonResponse(vendor, e.body, e.status, e.headers);
}

/** Whether a non-streaming reply must be sent in timed pieces too. */
const timed = (s: Scenario) => s.cut || s.stall || s.silent || s.delayMs > 0;

/** A JSON body in two halves, so that `cut`, `stall` and `slow` apply to it. */
function halves(body: string): WireEvent[] {
  const mid = Math.floor(body.length / 2);
  return [untyped(body.slice(0, mid), true), untyped(body.slice(mid), true)];
}

function isResponsesUpgrade(req: Request, url: URL): boolean {
  return req.method === "GET" && url.pathname === "/v1/responses" &&
    req.headers.get("upgrade")?.toLowerCase() === "websocket";
}

class Upstream implements MockUpstream {
  url = "";
  requests: RecordedRequest[] = [];
  wsFrames: string[] = [];
  aborted = 0;
  models = listedModels();
  failModelLists = false;
  #server?: Deno.HttpServer<Deno.NetAddr>;
  #closing = new AbortController();
  #deliveries = new Set<Promise<unknown>>();
  #sockets = new Set<ResponsesSocket>();
  #closed?: Promise<void>;

  constructor(
    private readonly record: boolean,
    private readonly platform?: MockPlatform,
    private readonly caching?: PromptCaches,
  ) {}

  listen(): Promise<void> {
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen: () => resolve(),
      onError: (error) => {
        // A cut stream errors its body on purpose; anything else is a bug in the mock.
        if (error !== CUT) console.error("mock upstream:", error);
        return new Response("mock upstream error", { status: 500 });
      },
    }, (req) => this.#handle(req));
    this.url = `http://127.0.0.1:${this.#server.addr.port}`;
    return promise;
  }

  close(): Promise<void> {
    return this.#closed ??= this.#shutdown();
  }

  async #shutdown(): Promise<void> {
    this.#closing.abort();
    await Promise.all([...this.#sockets].map((s) => s.close()));
    await Promise.allSettled([...this.#deliveries]);
    await this.#server?.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const text = await req.text();
    const json = parseJson(text);
    if (this.record) {
      this.requests.push({
        method: req.method,
        path: url.pathname,
        search: url.search,
        headers: Object.fromEntries(req.headers),
        body: text,
        ...(json === undefined ? {} : { json }),
      });
    }
    if (isResponsesUpgrade(req, url)) return this.#upgrade(req);
    const intercepted = await this.platform?.intercept?.(req, url, text);
    if (intercepted) return intercepted;
    // The vendors' model lists; a platform mock serves only its own paths.
    const list = this.platform ? undefined : modelList(req, url, this.models, this.failModelLists);
    if (list) {
      return "body" in list
        ? jsonResponse(list.vendor, list.body)
        : errorResponse(list.vendor, list.error, list.detail);
    }
    const stored = this.platform ? undefined : interactionResource(req.method, url.pathname);
    if (stored) return stored;
    for (const endpoint of this.platform?.endpoints ?? ENDPOINTS) {
      const match = req.method === "POST" ? url.pathname.match(endpoint.path) : null;
      if (!match) continue;
      if (!isObject(json)) {
        return errorResponse(endpoint.vendor, 400, { message: endpoint.vendor.badJson });
      }
      const model = endpoint.model ? endpoint.model(match) : String(json.model ?? "");
      const credential = (this.platform?.credential ?? credentialOf)(req.headers);
      const account = this.platform?.account?.(req.headers, url) ?? credentialOf(req.headers);
      return await this.#respond(endpoint, { body: json, text, url, model, credential, account });
    }
    const vendor = this.platform?.fallback ?? vendorForPath(url.pathname);
    return errorResponse(vendor, 404, { message: vendor.notFound(req.method, url.pathname) });
  }

  async #respond(endpoint: Endpoint, call: Call): Promise<Response> {
    const { vendor } = endpoint;
    let scenario = parseScenario(call.model);
    const echo = scenario.echo ? echoMessage(call.credential) : "";
    if (scenario.hang) {
      await sleep(STALL_MS, this.#closing.signal);
      return errorResponse(vendor, 503);
    }
    if (scenario.error && scenario.errorBody) {
      return rawError(scenario.error, scenario.errorBody, echo);
    }
    if (scenario.error) {
      return errorResponse(vendor, scenario.error, echo ? { message: echo } : undefined);
    }
    if (scenario.keyError && call.credential.includes("revoked")) {
      return errorResponse(vendor, scenario.keyError);
    }
    if (scenario.wrongType) {
      const page = "<!doctype html><html><body><h1>Sign in</h1></body></html>";
      return new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    if ("answer" in endpoint) {
      const answer = await endpoint.answer(call);
      return answer instanceof Response ? answer : jsonResponse(vendor, answer);
    }
    const invalid = vendor.validate(call.body);
    if (invalid) return errorResponse(vendor, 400, { message: invalid });
    let reply = replyFor(vendor, call.body, call.model, scenario);
    const prompt = this.caching && vendor.prompt?.(call.body, call.model);
    if (typeof prompt === "string") return errorResponse(vendor, 400, { message: prompt });
    if (prompt) {
      // Each model has its own cache.
      const use = this.caching!.use(`${call.account}\u0000${call.model}`, prompt);
      reply.usage = {
        ...reply.usage,
        input: use.input,
        cacheRead: use.read,
        cacheWrite: use.write + use.write1h,
        cacheWrite1h: use.write1h,
      };
    }
    const framing = endpoint.framing(call);
    if (scenario.long && vendor.longDecode) {
      const streamed = framing !== undefined;
      const model = { hops: scenario.long, cap: scenario.hopCap, overrun: scenario.overrun };
      const hop = planHop(vendor.longDecode, call.body, streamed, model, call.credential);
      if (typeof hop === "string") return errorResponse(vendor, 400, { message: hop });
      if (hop.index === scenario.failHop) return errorResponse(vendor, 503);
      if (hop.index === scenario.cutHop) scenario = { ...scenario, cut: true };
      if (hop.index === scenario.errHop) scenario = { ...scenario, errEvent: true };
      reply = hopReply(reply, hop);
    }
    if (scenario.finish) reply = { ...reply, finish: scenario.finish };
    if (echo && reply.text) reply.text += ` ${echo}`;
    if (framing) {
      const faults = {
        errorEvent: scenario.errEvent
          ? vendor.streamError(500, echo ? { message: echo } : undefined)
          : scenario.earlyErr
          ? vendor.streamError(529)
          : undefined,
        badJson: scenario.badJson,
        garbled: scenario.garbled,
      };
      return this.#stream(vendor.events(reply, call.body), framing, scenario, vendor, faults);
    }
    let text = JSON.stringify(vendor.json(reply, call.body));
    if (scenario.badJson) text = text.slice(0, -20) + "<!-- truncated -->";
    if (!timed(scenario)) {
      return new Response(text, {
        headers: { "content-type": vendor.jsonContentType, ...vendor.headers(reply) },
      });
    }
    return this.#stream(halves(text), rawFraming(vendor.jsonContentType), scenario, vendor);
  }

  #stream(
    events: WireEvent[],
    framing: Framing,
    scenario: Scenario,
    vendor: Vendor,
    faults?: Faults,
  ): Response {
    const closing = this.#closing.signal;
    const body = streamBody(events, framing, scenario, {
      closing,
      onClientGone: () => {
        if (!closing.aborted) this.aborted++;
      },
      track: (delivery) => {
        const tracked = delivery
          .catch((error) => console.error("mock upstream delivery:", error))
          .finally(() => this.#deliveries.delete(tracked));
        this.#deliveries.add(tracked);
      },
    }, faults);
    const headers = { "content-type": framing.contentType, "cache-control": "no-cache" };
    return new Response(body, { headers: { ...headers, ...vendor.headers() } });
  }

  #upgrade(req: Request): Response {
    const { socket, response } = Deno.upgradeWebSocket(req);
    const session = new ResponsesSocket(
      socket,
      this.#closing.signal,
      (t) => this.wsFrames.push(t),
      credentialOf(req.headers),
    );
    this.#sockets.add(session);
    session.closed.then(() => this.#sockets.delete(session));
    return response;
  }
}
