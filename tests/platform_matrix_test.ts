/**
 * The cloud platforms' proof matrix: every client format of the registry (tests/formats.ts) ×
 * every route of every registered platform (tests/platforms.ts: Bedrock Converse, Bedrock Claude
 * through InvokeModel, Vertex Gemini, Vertex Claude, Azure chat, Azure Responses) × JSON and
 * stream, for text, a tool call answered,
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
import type { RecordedRequest } from "./mock/upstream.ts";
import { type PlatformRoute as Route, TEST_PLATFORMS } from "./platforms.ts";

const QUESTION = "What is the weather in Paris?";
const RESULT = "18C and sunny";
const DECODE = { now: 0, id: "matrix" };

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

for (const platform of TEST_PLATFORMS) {
  Deno.test(`platform matrix: ${platform.id}, every client format × route × JSON/stream × text/tool/reasoning loop`, async (t) => {
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
