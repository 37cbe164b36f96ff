/**
 * The Vercel AI SDK (`ai` with `@ai-sdk/openai`, `@ai-sdk/anthropic`, `@ai-sdk/google`) against
 * every provider API: `generateText` and `streamText`, each through the four client formats.
 */
import assert from "node:assert/strict";
import {
  assertErrorStatus,
  type Harness,
  KEY,
  type Mode,
  model,
  MODES,
  PASSTHROUGH,
  type Provider,
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
  upstreamMark,
  USAGE,
  USER,
} from "./common.ts";
import {
  APICallError,
  createAnthropic,
  createGoogleGenerativeAI,
  createOpenAI,
  generateText,
  type LanguageModel,
  type LanguageModelUsage,
  stepCountIs,
  streamText,
  tool,
} from "./deps.ts";
import { z } from "zod";

// The AI SDK warns on stderr about unknown model names (the mock's); the tests check behaviour.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

type ProviderOptions = Parameters<typeof generateText>[0]["providerOptions"];

/** One way the AI SDK speaks to the gateway: a client format and how to ask for reasoning. */
interface Client {
  label: string;
  make(h: Harness): (modelName: string) => LanguageModel;
  /** Provider options that ask for reasoning; none when the format has no place for it. */
  thinking?: ProviderOptions;
  /** Also run against the Responses passthrough route. */
  passthrough?: boolean;
  /** What the mock answers to this client's tool result, when not the bare result text. */
  toolReply?: string;
  /** A cut stream may end as a short answer with finishReason "other" instead of an error. */
  cutIsShortFinish?: boolean;
}

const CLIENTS: Client[] = [
  {
    // `openai(m)` is the Responses API.
    label: "@ai-sdk/openai responses",
    make: (h) => createOpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY }),
    thinking: { openai: { reasoningEffort: "low", reasoningSummary: "auto" } },
    passthrough: true,
    // @ai-sdk/openai skips Responses event types it does not know, so the gateway's
    // `upstream_interrupted` event cannot make it throw; it ends with finishReason "other".
    cutIsShortFinish: true,
  },
  {
    // The AI SDK's chat model reads no reasoning field from chat completions.
    label: "@ai-sdk/openai chat",
    make: (h) => createOpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY }).chat,
  },
  {
    label: "@ai-sdk/anthropic",
    make: (h) => createAnthropic({ baseURL: `${h.url}/v1`, apiKey: KEY }),
    thinking: { anthropic: { thinking: { type: "enabled", budgetTokens: 1024 } } },
  },
  {
    label: "@ai-sdk/google",
    make: (h) => createGoogleGenerativeAI({ baseURL: `${h.url}/v1beta`, apiKey: KEY }),
    thinking: { google: { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } } },
    // @ai-sdk/google wraps a tool's output as `functionResponse.response: {name, content}`; the
    // model (and so the mock, and a converting gateway) sees that object, not a bare `output`.
    toolReply: `Tool said: ${JSON.stringify({ name: TOOL_NAME, content: TOOL_RESULT })}`,
  },
];

/**
 * Tool round trips to run: plain, and with reasoning where the client asks for it. With the
 * OpenAI provider's default `store: true`, the AI SDK replays reasoning as `item_reference`
 * items; `store: false` makes it send the reasoning items themselves.
 */
function toolCases(c: Client): [string, string, ProviderOptions | undefined][] {
  const cases: [string, string, ProviderOptions | undefined][] = [["tool", "", undefined]];
  if (c.thinking) cases.push(["think-tool", "", c.thinking]);
  if (c.thinking?.openai) {
    cases.push(["think-tool", ", store:false", {
      openai: { ...c.thinking.openai, store: false, include: ["reasoning.encrypted_content"] },
    }]);
  }
  return cases;
}

function assertUsage(u: LanguageModelUsage | undefined, want = USAGE) {
  assert.ok(u, "usage missing");
  assert.equal(u.inputTokens, want.input, `inputTokens: ${JSON.stringify(u)}`);
  assert.equal(u.outputTokens, want.output, `outputTokens: ${JSON.stringify(u)}`);
  assert.equal(u.totalTokens, want.input + want.output, "totalTokens");
  assert.equal(u.inputTokenDetails?.cacheReadTokens, want.cacheRead, "cacheReadTokens");
}

type Args = Parameters<typeof generateText>[0] & Parameters<typeof streamText>[0];

interface Result {
  text: string;
  reasoningText?: string;
  finishReason: string;
  usage: LanguageModelUsage;
  steps: Awaited<ReturnType<typeof generateText>>["steps"];
}

/**
 * `generateText`, or `streamText` with its full stream read to the end. A stream's error part is
 * thrown, as `generateText` would throw it.
 */
async function run(mode: Mode, args: Args): Promise<Result> {
  if (mode === "json") {
    const r = await generateText({ maxRetries: 0, ...args });
    return {
      text: r.text,
      reasoningText: r.reasoningText,
      finishReason: r.finishReason,
      usage: r.totalUsage,
      steps: r.steps,
    };
  }
  // Errors are read from the full stream below; without onError the AI SDK also logs them.
  const r = streamText({ maxRetries: 0, onError: () => {}, ...args });
  let deltas = "";
  for await (const part of r.fullStream) {
    if (part.type === "error") throw part.error;
    if (part.type === "text-delta") deltas += part.text;
  }
  const text = await r.text;
  assert.equal(deltas, text, "text deltas add up to the text");
  return {
    text,
    reasoningText: await r.reasoningText,
    finishReason: await r.finishReason,
    usage: await r.totalUsage,
    steps: await r.steps,
  };
}

function vercelTest(c: Client) {
  Deno.test(`sdk vercel ${c.label}: every provider API`, async (t) => {
    const h = await startHarness();
    const lm = c.make(h);
    const providers: Provider[] = c.passthrough ? [...PROVIDERS, PASSTHROUGH] : PROVIDERS;
    try {
      for (const p of providers) {
        for (const mode of MODES) {
          await step(t, h, `${p.label} ${mode}: text`, async () => {
            const m = upstreamMark(h);
            const r = await run(mode, { model: lm(model(p, "text")), prompt: USER });
            assert.equal(r.text, replyText(p));
            assert.equal(r.finishReason, "stop");
            assertUsage(r.usage);
            m.landed(p, model(p, "text"));
          });
        }
        for (const mode of MODES) {
          for (const [scenario, variant, options] of toolCases(c)) {
            await step(
              t,
              h,
              `${p.label} ${mode}: ${scenario} round trip (execute, 2 steps${variant})`,
              async () => {
                const m = upstreamMark(h);
                const name = model(p, scenario);
                const seen: unknown[] = [];
                const r = await run(mode, {
                  model: lm(name),
                  prompt: USER,
                  ...(options ? { providerOptions: options } : {}),
                  stopWhen: stepCountIs(2),
                  tools: {
                    [TOOL_NAME]: tool({
                      description: TOOL_DESCRIPTION,
                      inputSchema: z.object({ city: z.string() }),
                      execute: (input) => {
                        seen.push(input);
                        return Promise.resolve(TOOL_RESULT);
                      },
                    }),
                  },
                });
                const calls = r.steps[0]?.toolCalls ?? [];
                assert.equal(calls.length, 1, `step 1 tool calls: ${JSON.stringify(calls)}`);
                assert.equal(calls[0].toolName, TOOL_NAME);
                assert.deepEqual(calls[0].input, TOOL_ARGS);
                assert.equal(r.steps[0].finishReason, "tool-calls");
                assert.deepEqual(seen, [TOOL_ARGS]);
                assert.equal(r.steps.length, 2, "two steps");
                assert.equal(r.text, c.toolReply ?? TOOL_REPLY);
                m.landed(p, name, 2);
              },
            );
          }
        }
        if (c.thinking) {
          for (const mode of MODES) {
            await step(t, h, `${p.label} ${mode}: reasoning`, async () => {
              const m = upstreamMark(h);
              const r = await run(mode, {
                model: lm(model(p, "think")),
                prompt: USER,
                providerOptions: c.thinking,
              });
              assert.equal(r.reasoningText, REASONING);
              assert.equal(r.text, replyText(p));
              assertUsage(r.usage, THINK_USAGE);
              m.landed(p, model(p, "think"));
            });
          }
        }
        for (const mode of MODES) {
          await step(t, h, `${p.label} ${mode}: provider 429 is APICallError`, async () => {
            const e = await rejection(() =>
              run(mode, { model: lm(model(p, "err429")), prompt: USER })
            );
            assertErrorStatus(e, APICallError, 429, "statusCode");
          });
        }
        await step(t, h, `${p.label} stream: upstream cut mid-stream is an error`, async () => {
          // A stream that stops early must surface as an error part, not as a short answer.
          let result: Result;
          try {
            result = await run("stream", { model: lm(model(p, "cut")), prompt: USER });
          } catch (e) {
            // The AI SDK passes a provider's in-stream error payload through as it is.
            const message = (e as { message?: unknown })?.message;
            assert.ok(typeof message === "string" && message, `error without a message: ${e}`);
            return;
          }
          if (c.cutIsShortFinish && result.finishReason === "other") return;
          assert.fail(
            `the truncated stream ended without an error: text ${JSON.stringify(result.text)}, ` +
              `finishReason ${result.finishReason}`,
          );
        });
      }
    } finally {
      await h.close();
    }
  });
}

for (const c of CLIENTS) vercelTest(c);
