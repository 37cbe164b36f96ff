/** The published `@google/genai` SDK against every provider API. */
import assert from "node:assert/strict";
import {
  assertErrorStatus,
  type Harness,
  KEY,
  type Mode,
  model,
  MODES,
  PROVIDERS,
  REASONING,
  rejection,
  replyText,
  startHarness,
  step,
  THINK_USAGE,
  TOOL_ARGS,
  TOOL_DESCRIPTION,
  TOOL_NAME,
  TOOL_REPLY,
  TOOL_RESULT,
  TOOL_SCENARIOS,
  TOOL_SCHEMA,
  upstreamMark,
  USAGE,
  USER,
} from "./common.ts";
import {
  ApiError,
  type Content,
  type GeminiTool as Tool,
  type GenerateContentConfig,
  type GenerateContentParameters,
  type GenerateContentResponse,
  type GenerateContentResponseUsageMetadata,
  GoogleGenAI,
  type Part,
  Type,
} from "./deps.ts";

/** Gemini's own schema dialect (upper-case types), as older callers declare tools. */
const TOOLS_SCHEMA: Tool[] = [{
  functionDeclarations: [{
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: {
      type: Type.OBJECT,
      properties: { city: { type: Type.STRING, description: "City name" } },
      required: ["city"],
    },
  }],
}];
/** Plain JSON Schema (`parametersJsonSchema`), as newer callers (Gemini CLI) declare tools. */
const TOOLS_JSON_SCHEMA: Tool[] = [{
  functionDeclarations: [{
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parametersJsonSchema: TOOL_SCHEMA,
  }],
}];

/** `candidatesTokenCount` excludes thoughts; `thoughtsTokenCount` carries them. */
function assertUsage(u: GenerateContentResponseUsageMetadata | undefined, want = USAGE) {
  assert.ok(u, "usageMetadata missing");
  assert.equal(u.promptTokenCount, want.input, "promptTokenCount");
  assert.equal(u.candidatesTokenCount, want.output - want.reasoning, "candidatesTokenCount");
  assert.equal(u.totalTokenCount, want.input + want.output, "totalTokenCount");
  assert.equal(u.cachedContentTokenCount, want.cacheRead, "cachedContentTokenCount");
  if (want.reasoning) assert.equal(u.thoughtsTokenCount, want.reasoning, "thoughtsTokenCount");
}

interface Result {
  /** The candidate's parts (all chunks' parts, in order, for a stream). */
  parts: Part[];
  finishReason?: string;
  usage?: GenerateContentResponseUsageMetadata;
  /** The SDK's `.text` (joined over chunks for a stream). */
  text: string;
  chunks: number;
}

async function generate(ai: GoogleGenAI, mode: Mode, params: GenerateContentParameters) {
  const fold = (responses: GenerateContentResponse[]): Result => {
    const parts = responses.flatMap((r) => r.candidates?.[0]?.content?.parts ?? []);
    return {
      parts,
      finishReason: responses.findLast((r) => r.candidates?.[0]?.finishReason)?.candidates?.[0]
        ?.finishReason,
      usage: responses.at(-1)?.usageMetadata,
      text: responses.map((r) => r.text ?? "").join(""),
      chunks: responses.length,
    };
  };
  if (mode === "json") return fold([await ai.models.generateContent(params)]);
  const chunks: GenerateContentResponse[] = [];
  for await (const chunk of await ai.models.generateContentStream(params)) chunks.push(chunk);
  return fold(chunks);
}

const textParts = (parts: Part[]) => parts.filter((p) => !p.thought).map((p) => p.text ?? "");

Deno.test({
  name: "sdk @google/genai: every provider API",
  // js-genai throws on an in-stream error without cancelling the response body it was reading
  // (the "upstream cut" steps), which the resource sanitizer reports as the test's leak.
  sanitizeResources: false,
}, async (t) => {
  const h: Harness = await startHarness();
  const ai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
  try {
    for (const p of PROVIDERS) {
      for (const mode of MODES) {
        await step(t, h, `${p.label} ${mode}: text`, async () => {
          const m = upstreamMark(h);
          const r = await generate(ai, mode, { model: model(p, "text"), contents: USER });
          assert.equal(r.text, replyText(p));
          assert.equal(textParts(r.parts).join(""), replyText(p));
          assert.equal(r.finishReason, "STOP");
          assertUsage(r.usage);
          m.landed(p, model(p, "text"));
        });
      }
      for (const mode of MODES) {
        for (const scenario of TOOL_SCENARIOS) {
          const schema = mode === "json" ? "parameters" : "parametersJsonSchema";
          await step(t, h, `${p.label} ${mode}: ${scenario} round trip (${schema})`, async () => {
            const m = upstreamMark(h);
            const name = model(p, scenario);
            const config: GenerateContentConfig = {
              tools: mode === "json" ? TOOLS_SCHEMA : TOOLS_JSON_SCHEMA,
              ...(scenario === "think-tool"
                ? { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } }
                : {}),
            };
            const contents: Content[] = [{ role: "user", parts: [{ text: USER }] }];
            const first = await generate(ai, mode, { model: name, contents, config });
            const calls = first.parts.filter((x) => x.functionCall);
            assert.equal(
              calls.length,
              1,
              `expected one functionCall, got ${JSON.stringify(first)}`,
            );
            const fc = calls[0].functionCall!;
            assert.equal(fc.name, TOOL_NAME);
            assert.deepEqual(fc.args, TOOL_ARGS);
            assert.equal(first.finishReason, "STOP");
            contents.push({ role: "model", parts: first.parts }, {
              role: "user",
              parts: [{
                functionResponse: {
                  name: fc.name,
                  ...(fc.id ? { id: fc.id } : {}),
                  response: { output: TOOL_RESULT },
                },
              }],
            });
            const second = await generate(ai, mode, { model: name, contents, config });
            assert.equal(textParts(second.parts).join(""), TOOL_REPLY);
            m.landed(p, name, 2);
          });
        }
      }
      for (const mode of MODES) {
        await step(t, h, `${p.label} ${mode}: thinking as thought parts`, async () => {
          const m = upstreamMark(h);
          const r = await generate(ai, mode, {
            model: model(p, "think"),
            contents: USER,
            config: { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } },
          });
          const thoughts = r.parts.filter((x) => x.thought).map((x) => x.text ?? "").join("");
          assert.equal(thoughts, REASONING);
          assert.equal(textParts(r.parts).join(""), replyText(p));
          assertUsage(r.usage, THINK_USAGE);
          m.landed(p, model(p, "think"));
        });
      }
      for (const mode of MODES) {
        await step(t, h, `${p.label} ${mode}: provider 429 is ApiError`, async () => {
          const e = await rejection(() =>
            generate(ai, mode, { model: model(p, "err429"), contents: USER })
          );
          assertErrorStatus(e, ApiError, 429);
        });
      }
      await step(t, h, `${p.label} stream: upstream cut mid-stream is an ApiError`, async () => {
        const e = await rejection(() =>
          generate(ai, "stream", { model: model(p, "cut"), contents: USER })
        );
        assert.ok(e instanceof ApiError, `expected an ApiError, got ${e}`);
      });
    }
  } finally {
    await h.close();
  }
});
