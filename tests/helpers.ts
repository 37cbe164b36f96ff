import assert from "node:assert/strict";
/** Shared test fixtures: an in-process gateway on loopback in front of the mock upstream. */
import { type Config, validateConfig } from "../src/config/config.ts";
import type { Gateway } from "../src/request/context.ts";
import type { Dialect } from "../src/kit/format.ts";
import { type ErrorKind, GatewayError } from "../src/kit/errors.ts";
import { setAccessLogSink } from "../src/ops/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import { Formats } from "../src/request/formats.ts";
import type { LimitStore } from "../src/state/limits/store.ts";
import { PLUGINS } from "../plugins/mod.ts";
import { PLATFORMS } from "../plugins/platforms/mod.ts";
import { decodeFrames } from "./mock/eventstream.ts";
import { type MockUpstream, startMockUpstream } from "./mock/upstream.ts";
import { speaksUpstream, streamText, TEST_FORMATS, type TestFormat } from "./formats.ts";
import { HASHED_KEY, KEY } from "./requests.ts";

export {
  anthropicHeaders,
  bodies,
  googleHeaders,
  HASHED_KEY,
  KEY,
  openaiHeaders,
  THINKING_SIGNATURE,
  vertexHeaders,
  vertexModels,
} from "./requests.ts";

export const PROVIDER_KEY = "sk-provider-secret";

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The registered formats that have a provider on the mock upstream (tests/formats/<id>.ts). */
const MOCKED = TEST_FORMATS.flatMap((f) => f.mock ? [{ ...f, mock: f.mock }] : []);

/**
 * Each registered format's provider and routes (its `mock` side, tests/formats/<id>.ts), and
 * `demo-*` the demo provider. Routes go by prefix: `pt-*` Responses passthrough, `resp-*`
 * Responses (no passthrough flag), `chat-*` chat, `msg-*` Anthropic messages, `gem-*` Gemini,
 * `renamed-*` chat with an upstream rename to `chat-text-renamed`. The rest of the model name
 * picks the mock's scenario (text, tool, think, cut, stall, slow, err429, …).
 */
export async function mockConfig(
  upstream: string,
  timeouts: Record<string, number> = {},
): Promise<Config> {
  const provider = (name: string, api: string, base: string) => ({
    name,
    api,
    base_url: upstream + base,
    api_key: PROVIDER_KEY,
    timeouts,
  });
  return validateConfig({
    listen: { hostname: "127.0.0.1", port: 0 },
    keys: [
      { name: "team-a", key: KEY },
      { name: "team-b", sha256: await sha256Hex(HASHED_KEY) },
    ],
    providers: [
      ...MOCKED.map((f) => provider(f.mock.provider, f.id, f.providerBase ?? "")),
      { name: "demo", api: "demo" },
    ],
    routes: [
      ...MOCKED.flatMap((f) => f.mock.routes.map((r) => ({ ...r, provider: f.mock.provider }))),
      { models: ["demo-*"], provider: "demo" },
    ],
  });
}

/** The mock config's route for a model pattern (`chat-*`); its order follows the registry. */
export function routeFor(config: Config, pattern: string): Config["routes"][number] {
  const route = config.routes.find((r) => r.models.includes(pattern));
  if (!route) throw new Error(`no route for ${pattern}`);
  return route;
}

export interface Harness {
  url: string;
  /** The gateway itself (tests add observers to `gw.observers`). */
  gw: Gateway;
  upstream: MockUpstream;
  /** Access-log lines written while the harness ran. */
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Provider timeouts (e.g. short idle timeouts for stall tests). */
  timeouts?: Record<string, number>;
  /** Routes tried after the standard ones (e.g. a CLI's own default model names). */
  extraRoutes?: Config["routes"];
  /** Changes the config before the gateway starts (response store, catalog). */
  tweak?: (config: Config) => void;
  /** Where limits count (default: as the config says); tests shorten sliding windows. */
  limitStore?: LimitStore;
  /** Treat the config as the built-in default (its 404 hints name the vendor keys). */
  builtInConfig?: boolean;
}

/** The formats and platforms the gateway serves (main.ts hands the same plugins over). */
export const FORMATS = new Formats(PLUGINS, PLATFORMS);

/** Starts the mock upstream and a gateway (in this process) configured for it. */
export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const upstream = await startMockUpstream();
  const config = await mockConfig(upstream.url, opts.timeouts);
  config.routes.push(...(opts.extraRoutes ?? []));
  // Metrics on, as with the built-in config (no listener here: tests read `gw.metrics`).
  config.metrics = { hostname: "127.0.0.1", port: 0, max_label_values: 1000 };
  opts.tweak?.(config);
  const gw = await createGateway(config, FORMATS, {
    builtInConfig: opts.builtInConfig,
    limitStore: opts.limitStore,
  });
  const served = serveGateway(gw);
  return {
    ...served,
    upstream,
    async close() {
      await served.close();
      await upstream.close();
    },
  };
}

/**
 * A gateway served on loopback, its access log collected; `close` stops all it started.
 * `seen` is shown each request as the gateway receives it.
 */
export function serveGateway(
  gw: Gateway,
  seen?: (req: Request) => void,
): Omit<Harness, "upstream"> {
  const logs: Record<string, unknown>[] = [];
  const previous = setAccessLogSink((line) => logs.push(JSON.parse(line)));
  const handler = createHandler(gw);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    seen ? (req, info) => (seen(req), handler(req, info)) : handler,
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    gw,
    logs,
    async close() {
      await server.shutdown();
      await gw.providerModels.stop();
      await gw.store.close();
      await gw.limiter.store.close();
      setAccessLogSink(previous);
    },
  };
}

export function post(url: string, headers: Record<string, string>, body: unknown) {
  return fetch(url, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** One client format with a provider in the mock config: its endpoint, key header and body. */
export interface Ingress {
  /** The format's id. */
  name: string;
  /** Its clients' dialect: error envelope, stream interruption. */
  dialect: Dialect;
  /** Path for a model; Gemini's carries the model and the action. */
  path: (model: string, stream: boolean) => string;
  headers: Record<string, string>;
  body: (model: string, stream: boolean) => unknown;
  /** A model on the route whose provider speaks this same format (passthrough). */
  model: string;
  /** A request touching most of the format, without `model` (its test side's `client.rich`). */
  rich?: Record<string, unknown>;
  /** The provider format its requests relay to (its own id, but for a format only clients speak). */
  wire: string;
  /**
   * What its client reads of a stream's bytes, as text (formats.ts `streamText`): only the events
   * of a binary one (`binary`: Bedrock's event stream), not the provider's other lines.
   */
  streamText(bytes: Uint8Array): string;
  binary: boolean;
}

/** How a client of `f` reads its streams. */
const reading = (f: TestFormat) => ({
  streamText: (bytes: Uint8Array) => streamText(f, bytes),
  binary: f.streams.read !== undefined,
});

/** The registered formats with a provider in the mock config, in registry order. */
export const INGRESS: Ingress[] = MOCKED.map((f) => ({
  name: f.id,
  dialect: f.plugin.dialect,
  path: f.client.path,
  headers: f.client.headers(KEY),
  body: f.mock.body ?? f.client.body,
  model: f.mock.relayModel,
  rich: f.client.rich,
  wire: f.id,
  ...reading(f),
}));

/**
 * Every registered client format, in registry order: `INGRESS`, then the formats only clients
 * speak (Vertex's), whose `model` relays on their wire's provider. For properties every client
 * format has whatever its wire (scrubbing, faults, bad input, metrics).
 */
export const CLIENTS: Ingress[] = [
  ...INGRESS,
  ...TEST_FORMATS.filter((f) => !speaksUpstream(f)).map((f) => ({
    name: f.id,
    dialect: f.plugin.dialect,
    path: f.client.path,
    headers: f.client.headers(KEY),
    body: f.client.body,
    model: INGRESS.find((c) => c.name === f.plugin.codec.api)!.model,
    rich: f.client.rich,
    wire: f.plugin.codec.api,
    ...reading(f),
  })),
];

export type WsEvent = Record<string, unknown>;
/** A frame, or a function of the responses so far (to chain `previous_response_id`). */
type Frame = unknown | ((done: WsEvent[][]) => unknown);

/** Sends frames one response at a time over one client WebSocket; returns each one's events. */
export async function wsExchange(
  url: string,
  frames: Frame[],
  headers: Record<string, string> = { authorization: `Bearer ${KEY}` },
): Promise<WsEvent[][]> {
  const ws = new WebSocket(url.replace(/^http/, "ws") + "/v1/responses", { headers });
  const done: WsEvent[][] = [];
  let current: WsEvent[] = [];
  const { promise, resolve, reject } = Promise.withResolvers<void>();
  let next = 0;
  const sendNext = () => {
    if (next >= frames.length) return ws.close();
    const f = frames[next++];
    ws.send(JSON.stringify(typeof f === "function" ? f(done) : f));
  };
  ws.onopen = sendNext;
  ws.onmessage = (e) => {
    const event = JSON.parse(e.data);
    current.push(event);
    if (/^(response\.(completed|incomplete|failed)|error)$/.test(event.type)) {
      done.push(current);
      current = [];
      sendNext();
    }
  };
  ws.onclose = () => resolve();
  ws.onerror = (e) => reject(e);
  await promise;
  return done;
}

export const lastResponseId = (done: WsEvent[][]) =>
  (done.at(-1)!.at(-1)!.response as { id: string }).id;

/**
 * Starts a stream, reads its first chunk, then disconnects; resolves once the mock provider
 * has seen its request aborted (or fails after a second).
 */
export async function assertDisconnectAborts(
  h: Pick<Harness, "url" | "upstream">,
  c: Ingress,
  model: string,
  label: string,
) {
  const before = h.upstream.aborted;
  const ctrl = new AbortController();
  const res = await fetch(h.url + c.path(model, true), {
    method: "POST",
    headers: c.headers,
    body: JSON.stringify(c.body(model, true)),
    signal: ctrl.signal,
  });
  const reader = res.body!.getReader();
  await reader.read();
  ctrl.abort();
  await reader.cancel().catch(() => {});
  for (let i = 0; i < 50 && h.upstream.aborted === before; i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(h.upstream.aborted, before + 1, `${label}: the provider saw the abort`);
}

/** A provider of the mock config (see MOCK_PROVIDERS). */
export interface MockProvider {
  /** Its name in the config. */
  name: string;
  api: string;
  /** Appended to the mock's URL for its `base_url`. */
  base: string;
  /** The model prefix of the route that relays its own clients as is (`chat`, `pt`, `msg`). */
  prefix: string;
  /** That route's `passthrough` switch. */
  passthrough: boolean;
}

/**
 * The mock config's providers, one per format with a `mock` side, in registry order; the rest of
 * a model name after its prefix picks the mock's scenario (`msg-err429`).
 */
export const MOCK_PROVIDERS: MockProvider[] = MOCKED.map(({ id, providerBase, mock }) => {
  const prefix = mock.relayModel.slice(0, mock.relayModel.indexOf("-"));
  const route = mock.routes.find((r) => r.models.includes(`${prefix}-*`));
  return {
    name: mock.provider,
    api: id,
    base: providerBase ?? "",
    prefix,
    passthrough: route?.passthrough === true,
  };
});

const MARK = "@@message@@";

/**
 * Whether a client stream ends with its dialect's interruption ending (`Dialect.interruption`),
 * whatever the message said.
 */
export function endsInterrupted(c: Pick<Ingress, "dialect">, text: string): boolean {
  const ending = c.dialect.interruption(MARK).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`${ending.replace(MARK, "[^\\n]*")}$`).test(text);
}

/**
 * Whether a client stream (its bytes) was cut short as its dialect tells it: a text stream ends
 * with the dialect's interruption ending, saying `upstream_interrupted`; a binary one (Bedrock's
 * event stream) with its one exception frame, which says why.
 */
export function cutShort(c: Pick<Ingress, "dialect" | "binary">, bytes: Uint8Array): boolean {
  if (!c.binary) {
    const text = new TextDecoder().decode(bytes);
    return endsInterrupted(c, text) && text.includes('"upstream_interrupted"');
  }
  const frames = decodeFrames(bytes);
  const exceptions = frames.filter((f) => f.headers[":message-type"] === "exception");
  const last = frames.at(-1);
  return exceptions.length === 1 && exceptions[0] === last &&
    typeof JSON.parse(new TextDecoder().decode(last.payload)).message === "string";
}

/**
 * The message of an error answer, after checking it is in `c`'s dialect: the members its
 * `errorBody` writes around the message, and the error object's string ones (its type or
 * status) — equal to the dialect's own for `kind` when it is given.
 */
export function envelopeMessage(
  c: Pick<Ingress, "dialect">,
  body: Record<string, unknown>,
  kind?: ErrorKind,
): string {
  const err = new GatewayError(400, kind ?? "invalid_request", MARK);
  const sample = c.dialect.errorBody(err) as Record<string, unknown>;
  for (const key of Object.keys(sample)) {
    assert.ok(key in body, `no "${key}" of the dialect's envelope: ${JSON.stringify(body)}`);
  }
  if (typeof sample.error !== "object") {
    // A flat envelope (Bedrock's `{"message"}`): nothing else in it.
    assert.deepEqual(Object.keys(body), Object.keys(sample), `the dialect's envelope`);
    const [key] = Object.entries(sample).find(([, value]) => value === MARK)!;
    assert.equal(typeof body[key], "string", `no message: ${JSON.stringify(body)}`);
    return body[key] as string;
  }
  const e = body.error as Record<string, unknown> | undefined;
  assert.ok(e && typeof e.message === "string", `no error object: ${JSON.stringify(body)}`);
  for (const [key, value] of Object.entries(sample.error as Record<string, unknown>)) {
    if (typeof value !== "string" || value === MARK) continue;
    const what = `error.${key} of the dialect: ${JSON.stringify(body)}`;
    if (kind) assert.equal(e[key], value, what);
    else assert.equal(typeof e[key], "string", what);
  }
  return e.message as string;
}

/** A request on a connection of its own, so the kernel may hand it to either thread. */
export async function send(
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown>; requestId: string }> {
  const client = Deno.createHttpClient({});
  try {
    const res = await fetch(url, {
      client,
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      json: text.startsWith("{") ? JSON.parse(text) : { text },
      requestId: res.headers.get("x-gateway-request-id") ?? "",
    };
  } finally {
    client.close();
  }
}
