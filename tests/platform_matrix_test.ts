/**
 * The cloud platforms' proof matrix: every client format of the registry (tests/formats.ts) ×
 * every platform route (Bedrock Converse, Bedrock Claude through InvokeModel, Vertex Gemini,
 * Vertex Claude, Azure chat, Azure Responses) × JSON and stream, for text, a tool call answered,
 * and reasoning in a tool loop whose signature the client carries back to the platform. The
 * Responses WebSocket runs the same cases on every route. The mocks check what the platforms
 * check (SigV4, the Vertex access token minted from its JWT, the Azure `api-key`); the answers
 * are read with each format's own codec and their content asserted.
 */
import assert from "node:assert/strict";
import type * as ir from "../src/kit/ir.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import { sseFraming } from "../src/request/stream_stage.ts";
import { TEST_FORMATS, type TestFormat } from "./formats.ts";
import { KEY, post, type WsEvent, wsExchange } from "./helpers.ts";
import { AZURE_TEST_KEY, startMockAzure } from "./mock/azure.ts";
import { startMockBedrock } from "./mock/bedrock.ts";
import { signature } from "./mock/scenario.ts";
import type { MockUpstream, RecordedRequest } from "./mock/upstream.ts";
import { bedrockProvider, platformConfig, startPlatformGateway } from "./platform_harness.ts";
import { CLAUDE_AT, GEMINI_AT, modelCalls, startVertexGateway } from "./vertex_harness.ts";

const QUESTION = "What is the weather in Paris?";
const RESULT = "18C and sunny";
const DECODE = { now: 0, id: "matrix" };

/** A platform route: client models `<prefix>-…` go to it unrenamed (the name picks the scenario). */
interface Route {
  prefix: string;
  /** The mock vendor that answers (its text says `Hello from <vendor> mock`). */
  vendor: string;
  /** The upstream path a call of `model` goes to. */
  path(model: string, stream: boolean): string;
  /** The signature the mock puts on its reasoning; absent: the wire format carries none. */
  signature?(model: string): string;
}

/** A gateway in front of a platform mock: its URL, the calls the mock received. */
interface Served {
  url: string;
  calls(): RecordedRequest[];
  close(): Promise<void>;
}

interface Platform {
  name: string;
  routes: Route[];
  start(): Promise<Served>;
}

/** A gateway for `doc` in front of `mock`; closing closes both. */
async function inFront(
  mock: MockUpstream,
  doc: { providers: unknown[]; routes: unknown[] },
): Promise<Served> {
  const gateway = await startPlatformGateway(platformConfig(doc));
  return {
    url: gateway.url,
    calls: () => mock.requests,
    close: async () => {
      await gateway.close();
      await mock.close();
    },
  };
}

const bedrock: Platform = {
  name: "aws-bedrock",
  routes: [
    {
      prefix: "bi",
      vendor: "messages",
      path: (m, s) => `/model/${m}/${s ? "invoke-with-response-stream" : "invoke"}`,
      signature: (m) => signature("thinking", m),
    },
    {
      prefix: "bc",
      vendor: "converse",
      path: (m, s) => `/model/${m}/${s ? "converse-stream" : "converse"}`,
      signature: (m) => signature("reasoning", m),
    },
  ],
  async start() {
    const mock = await startMockBedrock();
    return await inFront(mock, {
      providers: [
        bedrockProvider("bedrock-claude", mock.url),
        { ...bedrockProvider("bedrock-converse", mock.url), api: "converse" },
      ],
      routes: [
        { models: ["bi-*"], provider: "bedrock-claude" },
        { models: ["bc-*"], provider: "bedrock-converse" },
      ],
    });
  },
};

const vertex: Platform = {
  name: "gcp-vertex",
  routes: [
    {
      prefix: "vg",
      vendor: "generate-content",
      path: (m, s) => `${GEMINI_AT}/${m}:${s ? "streamGenerateContent" : "generateContent"}`,
      signature: (m) => signature("thought", m),
    },
    {
      prefix: "vc",
      vendor: "messages",
      path: (m, s) => `${CLAUDE_AT}/${m}:${s ? "streamRawPredict" : "rawPredict"}`,
      signature: (m) => signature("thinking", m),
    },
  ],
  async start() {
    const h = await startVertexGateway();
    return { url: h.url, calls: () => modelCalls(h.vertex), close: () => h.close() };
  },
};

const azure: Platform = {
  name: "azure-openai",
  routes: [
    { prefix: "ac", vendor: "chat", path: () => "/openai/v1/chat/completions" },
    {
      prefix: "ar",
      vendor: "responses",
      path: () => "/openai/v1/responses",
      signature: (m) => signature("reasoning", m),
    },
  ],
  async start() {
    const mock = await startMockAzure();
    const base_url = `${mock.url}/openai/v1`;
    const azure = (name: string, api: string) => ({
      name,
      api,
      platform: "azure-openai",
      base_url,
      api_key: AZURE_TEST_KEY,
    });
    return await inFront(mock, {
      providers: [azure("az-chat", "chat"), azure("az-resp", "responses")],
      routes: [
        { models: ["ac-*"], provider: "az-chat" },
        // As Codex users set it, so that `previous_response_id` reaches Azure over HTTP.
        { models: ["ar-*"], provider: "az-resp", passthrough: true },
      ],
    });
  },
};

/** A client stream's events, as the format's own framing divides them. */
function streamEvents(format: TestFormat, text: string): SseEvent[] {
  const framing = format.plugin.upstream?.framing?.() ?? sseFraming();
  const decoder = new TextDecoder();
  return framing.scan(new TextEncoder().encode(text), 0, (b) => decoder.decode(b)).events;
}

/** The IR answer a format's stream events build (the format's own decoder reads them). */
async function streamAnswer(format: TestFormat, events: SseEvent[]): Promise<ir.Response> {
  const out: ir.StreamEvent[] = [];
  const step = format.plugin.codec.decodeStream(DECODE);
  for (const e of events) await step.transform(e, { enqueue: (x) => out.push(x) });
  const res: ir.Response = { id: "", model: "", created: 0, parts: [], finish: "error" };
  for (const e of out) {
    // The part an event fills: text, thinking or a tool call.
    type Filled = { text: string; arguments: string; signature?: ir.Signature };
    const part = ("index" in e ? res.parts[e.index] : {}) as Filled;
    switch (e.type) {
      case "start":
        res.id = e.id;
        res.model = e.model;
        break;
      case "part_start":
        res.parts[e.index] = e.part.type === "tool_call"
          ? { ...e.part, arguments: "" }
          : e.part.type === "text" || e.part.type === "thinking"
          ? { ...e.part, text: "" }
          : e.part;
        break;
      case "text_delta":
      case "thinking_delta":
        part.text += e.text;
        break;
      case "arguments_delta":
        part.arguments += e.json;
        break;
      case "signature":
        part.signature = e.signature;
        break;
      case "finish":
        res.finish = e.reason;
        res.usage = e.usage;
        break;
      case "error":
        assert.fail(`stream error: ${e.message}`);
    }
  }
  return res;
}

/** One turn over HTTP: the answer in IR, and as the client keeps it (the format's JSON). */
async function turn(
  format: TestFormat,
  url: string,
  model: string,
  stream: boolean,
  body: unknown,
) {
  const res = await post(url + format.client.path(model, stream), format.client.headers(KEY), body);
  const text = await res.text();
  assert.equal(res.status, 200, text.slice(0, 400));
  const { codec } = format.plugin;
  if (!stream) {
    const json = JSON.parse(text);
    return { answer: codec.decodeResponse(json, DECODE), kept: json };
  }
  const events = streamEvents(format, text);
  const answer = await streamAnswer(format, events);
  const kept = format.loop?.kept?.(events) ??
    codec.encodeResponse(answer, { model }) as Record<string, unknown>;
  return { answer, kept };
}

/** One turn over the Responses WebSocket (a converted stream on every platform route). */
async function wsTurn(format: TestFormat, url: string, body: Record<string, unknown>) {
  const [events] = await wsExchange(url, [{ ...body, type: "response.create" }]);
  const last: WsEvent = events.at(-1)!;
  assert.equal(last.type, "response.completed", JSON.stringify(last).slice(0, 400));
  const kept = last.response as Record<string, unknown>;
  return { answer: format.plugin.codec.decodeResponse(kept, DECODE), kept };
}

const textOf = (res: ir.Response, type: "text" | "thinking") =>
  res.parts.filter((p) => p.type === type).map((p) => (p as ir.TextPart).text).join("");

const toolCall = (res: ir.Response) =>
  res.parts.find((p): p is ir.ToolCallPart => p.type === "tool_call");

type Turn = (model: string, body: Record<string, unknown>) => Promise<{
  answer: ir.Response;
  kept: Record<string, unknown>;
}>;

/**
 * The three cases on one route through one transport: text; a tool call answered; reasoning in
 * a tool loop, its signature back upstream on the second call.
 */
async function cases(
  format: TestFormat,
  route: Route,
  stream: boolean,
  send: Turn,
  calls: () => RecordedRequest[],
) {
  const { loop } = format;
  assert.ok(loop, `format ${format.id}: no loop side in tests/formats/${format.id}.ts`);
  const lastCall = () => calls().at(-1)!;

  const text = `${route.prefix}-text`;
  const { answer } = await send(text, loop.ask(text, stream, QUESTION));
  assert.equal(textOf(answer, "text"), `Hello from ${route.vendor} mock: ${QUESTION}`);
  assert.equal(lastCall().path, route.path(text, stream));

  for (const model of [`${route.prefix}-tool`, `${route.prefix}-think-tool`]) {
    const ask = loop.ask(model, stream, QUESTION);
    const first = await send(model, ask);
    const call = toolCall(first.answer);
    assert.ok(call, `${model}: a tool call`);
    assert.equal(call.name, "get_weather");
    assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });
    const thinks = model.includes("think");
    if (thinks) assert.match(textOf(first.answer, "thinking"), /The user wrote/, model);
    const next = loop.followUp(ask, first.kept, call, RESULT);
    const second = await send(model, next);
    assert.equal(textOf(second.answer, "text"), `Tool said: ${RESULT}`, model);
    assert.equal(lastCall().path, route.path(model, stream));
    if (thinks && route.signature) {
      assert.ok(
        lastCall().body.includes(route.signature(model)),
        `${model}: the signature went back upstream: ${lastCall().body.slice(0, 600)}`,
      );
    }
  }
}

/** Formats whose clients may also speak over a WebSocket (the Responses transport). */
const upgrades = (f: TestFormat) => f.plugin.endpoints.some((e) => e.upgrade);

for (const platform of [bedrock, vertex, azure]) {
  Deno.test(`platform matrix: ${platform.name}, every client format × route × JSON/stream × text/tool/reasoning loop`, async (t) => {
    const h = await platform.start();
    try {
      for (const route of platform.routes) {
        for (const format of TEST_FORMATS) {
          for (const stream of [false, true]) {
            const how = stream ? "stream" : "JSON";
            await t.step(`${format.id} → ${route.prefix} (${how})`, () =>
              cases(
                format,
                route,
                stream,
                (model, body) => turn(format, h.url, model, stream, body),
                h.calls,
              ));
          }
          if (upgrades(format)) {
            await t.step(`${format.id} WebSocket → ${route.prefix}`, () =>
              cases(
                format,
                route,
                true,
                (_model, { stream: _, ...body }) => wsTurn(format, h.url, body),
                h.calls,
              ));
          }
        }
      }
    } finally {
      await h.close();
    }
  });
}
