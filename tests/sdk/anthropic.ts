/**
 * The published `@anthropic-ai/sdk` against every provider API, twice: the current 1.x (Bearer
 * auth, `anthropic-version: 2026-10-21`) and the last 0.x (`x-api-key`, `2023-06-01`).
 */
import assert from "node:assert/strict";
import {
  assertErrorStatus,
  type Harness,
  KEY,
  model,
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
import { Anthropic, Anthropic0 } from "./deps.ts";

type Message = Anthropic.Message;
type MessageParam = Anthropic.MessageParam;
type Params = Anthropic.MessageCreateParamsNonStreaming;

const TOOLS: Anthropic.Tool[] = [{
  name: TOOL_NAME,
  description: TOOL_DESCRIPTION,
  input_schema: TOOL_SCHEMA as Anthropic.Tool.InputSchema,
}];

/**
 * Anthropic's `input_tokens` excludes cache reads and writes. A provider that reports no cache
 * writes (Gemini) leaves them in `input_tokens`, so only the sum and the reads are fixed.
 */
function assertUsage(u: Message["usage"] | undefined, want = USAGE) {
  assert.ok(u, "usage missing");
  const input = u.input_tokens + (u.cache_read_input_tokens ?? 0) +
    (u.cache_creation_input_tokens ?? 0);
  assert.equal(input, want.input, `input + cache read + cache write: ${JSON.stringify(u)}`);
  assert.equal(u.cache_read_input_tokens, want.cacheRead, "cache_read_input_tokens");
  assert.equal(u.output_tokens, want.output, "output_tokens");
}

const textOf = (m: Message) => m.content.map((b) => b.type === "text" ? b.text : "").join("");

interface Result {
  message: Message;
  /** Event types in order (raw streams only). */
  types?: string[];
  deltas?: string;
}

/** `create()` without a stream, with `stream: true` (events folded by hand), or the helper. */
async function call(
  client: Anthropic,
  how: "json" | "create-stream" | "helper",
  params: Params,
): Promise<Result> {
  if (how === "json") return { message: await client.messages.create(params) };
  if (how === "helper") {
    const s = client.messages.stream(params);
    let deltas = "";
    s.on("text", (d) => deltas += d);
    return { message: await s.finalMessage(), deltas };
  }
  const stream = await client.messages.create({ ...params, stream: true });
  const types: string[] = [];
  let message: Message | undefined;
  let deltas = "";
  const blocks: Record<string, unknown>[] = [];
  const partial: string[] = [];
  for await (const ev of stream) {
    types.push(ev.type);
    switch (ev.type) {
      case "message_start":
        message = { ...ev.message, content: [] };
        break;
      case "content_block_start":
        blocks[ev.index] = { ...ev.content_block };
        partial[ev.index] = "";
        break;
      case "content_block_delta": {
        const b = blocks[ev.index];
        assert.ok(b, `delta for unopened block ${ev.index}`);
        const d = ev.delta;
        if (d.type === "text_delta") {
          b.text = `${b.text ?? ""}${d.text}`;
          deltas += d.text;
        } else if (d.type === "thinking_delta") b.thinking = `${b.thinking ?? ""}${d.thinking}`;
        else if (d.type === "signature_delta") b.signature = d.signature;
        else if (d.type === "input_json_delta") partial[ev.index] += d.partial_json;
        break;
      }
      case "content_block_stop":
        if (blocks[ev.index].type === "tool_use") {
          blocks[ev.index].input = partial[ev.index] ? JSON.parse(partial[ev.index]) : {};
        }
        break;
      case "message_delta":
        assert.ok(message, "message_delta before message_start");
        message.stop_reason = ev.delta.stop_reason;
        message.usage = { ...message.usage, ...ev.usage } as Message["usage"];
        break;
    }
  }
  assert.equal(types[0], "message_start", `event order: ${types.join(",")}`);
  assert.equal(types.at(-1), "message_stop", `event order: ${types.join(",")}`);
  assert.ok(message);
  message.content = blocks as unknown as Message["content"];
  return { message, types, deltas };
}

const WAYS = ["json", "create-stream", "helper"] as const;

function anthropicTest(label: string, SDK: typeof Anthropic) {
  Deno.test(`sdk ${label} messages: every provider API`, async (t) => {
    const h: Harness = await startHarness();
    const client = new SDK({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
    const base = { max_tokens: 1024, messages: [{ role: "user" as const, content: USER }] };
    try {
      for (const p of PROVIDERS) {
        for (const how of WAYS) {
          await step(t, h, `${p.label} ${how}: text`, async () => {
            const m = upstreamMark(h);
            const r = await call(client, how, { ...base, model: model(p, "text") });
            assert.equal(r.message.role, "assistant");
            assert.equal(textOf(r.message), replyText(p));
            if (r.deltas !== undefined) assert.equal(r.deltas, replyText(p), "text deltas");
            assert.equal(r.message.stop_reason, "end_turn");
            assertUsage(r.message.usage);
            m.landed(p, model(p, "text"));
          });
        }
        for (const how of ["json", "helper"] as const) {
          for (const scenario of TOOL_SCENARIOS) {
            await step(t, h, `${p.label} ${how}: ${scenario} round trip`, async () => {
              const m = upstreamMark(h);
              const name = model(p, scenario);
              const messages: MessageParam[] = [{ role: "user", content: USER }];
              const params = {
                model: name,
                max_tokens: 2048,
                tools: TOOLS,
                ...(scenario === "think-tool"
                  ? { thinking: { type: "enabled", budget_tokens: 1024 } as const }
                  : {}),
              };
              const first = await call(client, how, { ...params, messages });
              assert.equal(first.message.stop_reason, "tool_use");
              const use = first.message.content.find((b) => b.type === "tool_use");
              assert.ok(use, `expected a tool_use block, got ${JSON.stringify(first.message)}`);
              assert.equal(use.name, TOOL_NAME);
              assert.deepEqual(use.input, TOOL_ARGS);
              assert.match(use.id, /^[A-Za-z0-9_-]+$/, "tool_use id (Anthropic's pattern)");
              messages.push(
                { role: "assistant", content: first.message.content as MessageParam["content"] },
                {
                  role: "user",
                  content: [{ type: "tool_result", tool_use_id: use.id, content: TOOL_RESULT }],
                },
              );
              const second = await call(client, how, { ...params, messages });
              assert.equal(textOf(second.message), TOOL_REPLY);
              assert.equal(second.message.stop_reason, "end_turn");
              m.landed(p, name, 2);
            });
          }
        }
        for (const how of ["json", "create-stream"] as const) {
          await step(t, h, `${p.label} ${how}: thinking block`, async () => {
            const m = upstreamMark(h);
            const r = await call(client, how, {
              ...base,
              max_tokens: 2048,
              model: model(p, "think"),
              thinking: { type: "enabled", budget_tokens: 1024 },
            });
            const thinking = r.message.content.find((b) => b.type === "thinking");
            assert.ok(thinking, `expected a thinking block, got ${JSON.stringify(r.message)}`);
            assert.equal(thinking.thinking, REASONING);
            assert.equal(typeof thinking.signature, "string", "thinking.signature");
            assert.equal(r.message.content[0].type, "thinking", "thinking comes first");
            assert.equal(textOf(r.message), replyText(p));
            assertUsage(r.message.usage, THINK_USAGE);
            m.landed(p, model(p, "think"));
          });
        }
        for (const how of WAYS) {
          await step(t, h, `${p.label} ${how}: provider 429 is RateLimitError`, async () => {
            const e = await rejection(() =>
              call(client, how, { ...base, model: model(p, "err429") })
            );
            assertErrorStatus(e, SDK.RateLimitError, 429);
          });
        }
        for (const how of ["create-stream", "helper"] as const) {
          await step(
            t,
            h,
            `${p.label} ${how}: upstream cut mid-stream is an APIError`,
            async () => {
              const e = await rejection(() =>
                call(client, how, { ...base, model: model(p, "cut") })
              );
              assert.ok(e instanceof SDK.APIError, `expected an APIError, got ${e}`);
            },
          );
        }
      }
    } finally {
      await h.close();
    }
  });
}

anthropicTest("@anthropic-ai/sdk 1.x", Anthropic);
// The 0.x SDK's types differ in detail; the calls used here are the same.
anthropicTest("@anthropic-ai/sdk 0.x", Anthropic0 as unknown as typeof Anthropic);
