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
import { TEST_FORMATS, type TestFormat } from "./formats.ts";
import { turn, wsTurn } from "./loop_turns.ts";
import type { RecordedRequest } from "./mock/upstream.ts";
import { type PlatformRoute as Route, TEST_PLATFORMS } from "./platforms.ts";

const QUESTION = "What is the weather in Paris?";
const RESULT = "18C and sunny";

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
