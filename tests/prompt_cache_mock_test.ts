/**
 * The mock providers' prompt caches (tests/mock/prompt_cache.ts) against the vendors' documented
 * rules, driven with plain fetch: Anthropic's breakpoints (prefix order, minimum, look-back,
 * lifetime, per-key caches, the four-marker and lifetime-order 400s) on its own API and behind
 * Bedrock InvokeModel; Converse `cachePoint` by model; OpenAI's automatic caching (1024 tokens,
 * 128-token steps, `prompt_cache_key`); Gemini's implicit caching. Usage is read in each
 * vendor's own fields.
 */
import assert from "node:assert/strict";
import { startMockBedrock } from "./mock/bedrock.ts";
import { CACHE_POINT_AFTER_REASONING, UNSUPPORTED_CACHING } from "./mock/converse.ts";
import { PromptCaches, tokensOf } from "./mock/prompt_cache.ts";
import { type MockUpstream, startMockUpstream } from "./mock/upstream.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** A deterministic text of about `tokens` tokens (by the mock's estimate), distinct per `seed`. */
function filler(seed: string, tokens: number): string {
  const words: string[] = [];
  for (let i = 0; words.join(" ").length < tokens * 4; i++) words.push(`${seed}${i}`);
  return words.join(" ");
}

/** A clock the test moves. */
function clock() {
  let t = 1_800_000_000_000;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

async function withMock(
  fn: (mock: MockUpstream, time: ReturnType<typeof clock>) => Promise<void>,
) {
  const time = clock();
  const mock = await startMockUpstream({ caching: new PromptCaches(time.now) });
  try {
    await fn(mock, time);
  } finally {
    await mock.close();
  }
}

async function call(mock: MockUpstream, path: string, body: unknown, headers = {}) {
  const res = await fetch(mock.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: text.startsWith("{") ? JSON.parse(text) : undefined,
  };
}

const SYSTEM = filler("sys", 1500);
const ephemeral = (ttl?: string) => ({ type: "ephemeral", ...(ttl && { ttl }) });
const cachedSystem = (
  ttl?: string,
) => [{ type: "text", text: SYSTEM, cache_control: ephemeral(ttl) }];
const user = (text: string, control?: Json) => ({
  role: "user",
  content: [{ type: "text", text, ...(control && { cache_control: control }) }],
});

/** Anthropic's usage of a JSON answer (key `k`). */
async function anthropicUsage(mock: MockUpstream, body: Json, key = "key-a") {
  const r = await call(mock, "/v1/messages", { max_tokens: 64, ...body }, { "x-api-key": key });
  assert.equal(r.status, 200, r.text);
  return r.json.usage;
}

Deno.test("prompt cache mock: Anthropic breakpoints", async (t) => {
  await withMock(async (mock, time) => {
    const model = "claude-sonnet-4-5";
    const systemTokens = tokensOf(JSON.stringify({ type: "text", text: SYSTEM }));

    await t.step(
      "a marked system prefix is written, then read; the rest is input_tokens",
      async () => {
        const body = { model, system: cachedSystem(), messages: [user("first question")] };
        const first = await anthropicUsage(mock, body);
        assert.equal(first.cache_creation_input_tokens, systemTokens);
        assert.equal(first.cache_read_input_tokens, 0);
        assert.equal(first.cache_creation.ephemeral_5m_input_tokens, systemTokens);
        const second = await anthropicUsage(mock, { ...body, messages: [user("another")] });
        assert.equal(second.cache_read_input_tokens, systemTokens);
        assert.equal(second.cache_creation_input_tokens, 0);
        assert.equal(
          second.input_tokens,
          tokensOf(JSON.stringify({ type: "text", text: "another" })),
        );
      },
    );

    await t.step("caches are per API key", async () => {
      const body = { model, system: cachedSystem(), messages: [user("q")] };
      const other = await anthropicUsage(mock, body, "key-b");
      assert.equal(other.cache_read_input_tokens, 0);
      assert.equal(other.cache_creation_input_tokens, systemTokens);
    });

    await t.step("below the model's minimum nothing is cached and nothing fails", async () => {
      const body = { model: "claude-haiku-4-5", system: cachedSystem(), messages: [user("q")] };
      for (let i = 0; i < 2; i++) {
        const u = await anthropicUsage(mock, body);
        assert.equal(u.cache_creation_input_tokens, 0);
        assert.equal(u.cache_read_input_tokens, 0);
      }
    });

    await t.step("the end marker is found again up to 20 blocks back, not 21", async () => {
      const turns = (n: number) => Array.from({ length: n }, (_, i) => user(`turn ${i}`));
      const marked = (messages: Json[]) => {
        const last = messages.at(-1);
        const block = { ...last.content[0], cache_control: ephemeral() };
        return [...messages.slice(0, -1), { ...last, content: [block] }];
      };
      const system = filler("back", 1500);
      const base = turns(1);
      const start = await anthropicUsage(mock, { model, system, messages: marked(base) });
      assert.ok(start.cache_creation_input_tokens > 0);
      const near = [...base, ...turns(20).map((m) => ({ ...m, role: "user" }))];
      const u20 = await anthropicUsage(mock, { model, system, messages: marked(near) });
      assert.equal(u20.cache_read_input_tokens, start.cache_creation_input_tokens, "20 back");
      const far = [...near, ...turns(21)];
      const u21 = await anthropicUsage(mock, { model, system, messages: marked(far) });
      assert.equal(u21.cache_read_input_tokens, 0, "21 blocks past the last entry: a miss");
    });

    await t.step("five markers, and a top-level marker with four: Anthropic's 400", async () => {
      const tools = [1, 2].map((i) => ({
        name: `t${i}`,
        input_schema: { type: "object" },
        cache_control: ephemeral(),
      }));
      const messages = [user("a", ephemeral()), user("b", ephemeral())];
      const five = await call(mock, "/v1/messages", {
        model,
        max_tokens: 8,
        tools,
        system: cachedSystem(),
        messages,
      });
      assert.equal(five.status, 400);
      assert.equal(five.json.error.type, "invalid_request_error");
      assert.equal(
        five.json.error.message,
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
      );
      const top = await call(mock, "/v1/messages", {
        model,
        max_tokens: 8,
        tools,
        messages,
        cache_control: ephemeral(),
      });
      assert.equal(
        top.json.error.message,
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
      );
    });

    await t.step("a 1h marker after a 5m one is refused, named by its path", async () => {
      const r = await call(mock, "/v1/messages", {
        model,
        max_tokens: 8,
        system: cachedSystem(),
        messages: [user("x", ephemeral("1h"))],
      });
      assert.equal(r.status, 400);
      assert.equal(
        r.json.error.message,
        "messages.0.content.0.cache_control.ttl: a ttl='1h' cache_control block must not come " +
          "after a ttl='5m' cache_control block. Note that blocks are processed in the following " +
          "order: `tools`, `system`, `messages`.",
      );
    });

    await t.step("lifetimes: 5 minutes refreshed by a hit, an hour with ttl 1h", async () => {
      const fresh = {
        model,
        system: [{ type: "text", text: filler("life", 1200), cache_control: ephemeral() }],
      };
      await anthropicUsage(mock, { ...fresh, messages: [user("1")] });
      time.advance(4 * 60_000);
      assert.ok(
        (await anthropicUsage(mock, { ...fresh, messages: [user("2")] })).cache_read_input_tokens >
          0,
      );
      time.advance(4 * 60_000); // 8 minutes after the write, 4 after the refreshing hit
      assert.ok(
        (await anthropicUsage(mock, { ...fresh, messages: [user("3")] })).cache_read_input_tokens >
          0,
      );
      time.advance(6 * 60_000);
      const expired = await anthropicUsage(mock, { ...fresh, messages: [user("4")] });
      assert.equal(expired.cache_read_input_tokens, 0, "expired after 5 idle minutes");
      const hour = { model, system: cachedSystem("1h") };
      const written = await anthropicUsage(mock, { ...hour, messages: [user("5")] }, "key-h");
      assert.equal(written.cache_creation.ephemeral_1h_input_tokens, systemTokens);
      assert.equal(written.cache_creation.ephemeral_5m_input_tokens, 0);
      time.advance(50 * 60_000);
      const read = await anthropicUsage(mock, { ...hour, messages: [user("6")] }, "key-h");
      assert.equal(read.cache_read_input_tokens, systemTokens);
    });

    await t.step(
      "a changed tool_choice misses from the system on; the tools entry still hits",
      async () => {
        const tools = [{
          name: "big",
          description: filler("tool", 1100),
          input_schema: { type: "object" },
          cache_control: ephemeral(),
        }];
        const body = { model, tools, system: cachedSystem(), messages: [user("q")] };
        await anthropicUsage(mock, { ...body, tool_choice: { type: "auto" } }, "key-c");
        const same = await anthropicUsage(
          mock,
          { ...body, tool_choice: { type: "auto" } },
          "key-c",
        );
        const changed = await anthropicUsage(
          mock,
          { ...body, tool_choice: { type: "any" } },
          "key-c",
        );
        assert.ok(changed.cache_read_input_tokens > 0, "the tools are read");
        assert.ok(
          changed.cache_read_input_tokens < same.cache_read_input_tokens,
          "the system is not",
        );
      },
    );

    await t.step("a stream reports the counts in message_start and message_delta", async () => {
      const primed = { model, system: cachedSystem(), messages: [user("s")] };
      await anthropicUsage(mock, primed, "key-s");
      const body = { ...primed, max_tokens: 8, stream: true };
      const r = await call(mock, "/v1/messages", body, { "x-api-key": "key-s" });
      const events = r.text.split("\n").filter((l) => l.startsWith("data: ")).map((l) =>
        JSON.parse(l.slice(6))
      );
      const start = events.find((e) => e.type === "message_start").message.usage;
      const delta = events.find((e) => e.type === "message_delta").usage;
      assert.equal(start.cache_read_input_tokens, systemTokens);
      assert.equal(delta.cache_read_input_tokens, systemTokens);
      assert.equal(delta.input_tokens, start.input_tokens);
    });
  });
});

Deno.test("prompt cache mock: Bedrock InvokeModel reports the cache in its headers; Converse cachePoint by model", async (t) => {
  const time = clock();
  const mock = await startMockBedrock({
    apiKey: "bedrock-api-key-1",
    caching: new PromptCaches(time.now),
  });
  const headers = { authorization: "Bearer bedrock-api-key-1" };
  const invoke = (model: string, body: Json) =>
    call(mock, `/model/${model}/invoke`, {
      anthropic_version: "bedrock-2023-05-31",
      max_tokens: 8,
      ...body,
    }, headers);
  const converse = (model: string, body: Json) =>
    call(mock, `/model/${model}/converse`, body, headers);
  const claude = "anthropic.claude-sonnet-4-5-20250929-v1:0";
  try {
    await t.step(
      "InvokeModel: the x-amzn-bedrock-cache-* headers count the write, then the read",
      async () => {
        const body = { system: cachedSystem(), messages: [user("q")] };
        const first = await invoke(claude, body);
        assert.equal(first.status, 200, first.text);
        const written = Number(first.headers.get("x-amzn-bedrock-cache-write-input-token-count"));
        assert.ok(written > 1000);
        assert.equal(first.json.usage.cache_creation_input_tokens, written);
        const second = await invoke(claude, body);
        assert.equal(
          Number(second.headers.get("x-amzn-bedrock-cache-read-input-token-count")),
          written,
        );
      },
    );

    const cachePoint = { cachePoint: { type: "default" } };
    const system = [{ text: SYSTEM }, cachePoint];
    const messages = [{ role: "user", content: [{ text: "hello" }] }];

    await t.step(
      "Converse on Claude: cacheWriteInputTokens, then cacheReadInputTokens",
      async () => {
        const first = await converse(claude, { system, messages });
        assert.equal(first.status, 200, first.text);
        const written = first.json.usage.cacheWriteInputTokens;
        assert.equal(written, tokensOf(JSON.stringify({ text: SYSTEM })));
        const second = await converse(claude, { system, messages });
        assert.equal(second.json.usage.cacheReadInputTokens, written);
        assert.equal(
          second.json.usage.inputTokens,
          second.json.usage.totalTokens - written - second.json.usage.outputTokens,
        );
      },
    );

    await t.step("a model without caching refuses any cachePoint", async () => {
      const r = await converse("meta.llama3-3-70b-instruct-v1:0", { system, messages });
      assert.equal(r.status, 400);
      assert.match(r.headers.get("x-amzn-errortype")!, /^ValidationException/);
      assert.equal(r.json.message, UNSUPPORTED_CACHING);
      const plain = await converse("meta.llama3-3-70b-instruct-v1:0", {
        system: [{ text: SYSTEM }],
        messages,
      });
      assert.equal(plain.status, 200);
    });

    await t.step("Nova takes cachePoint in system and messages, not among tools", async () => {
      const nova = "amazon.nova-pro-v1:0";
      const ok = await converse(nova, { system, messages });
      assert.equal(ok.status, 200, ok.text);
      assert.ok(ok.json.usage.cacheWriteInputTokens > 0);
      const tools = [
        { toolSpec: { name: "t", inputSchema: { json: { type: "object" } } } },
        cachePoint,
      ];
      const r = await converse(nova, { system, messages, toolConfig: { tools } });
      assert.equal(r.status, 400);
      assert.match(r.json.message, /#\/toolConfig\/tools\/1: extraneous key \[cachePoint\]/);
    });

    await t.step("a cachePoint after reasoning, and a fifth, are refused", async () => {
      const reasoning = { reasoningContent: { reasoningText: { text: "hmm", signature: "s" } } };
      const after = await converse(claude, {
        messages: [
          ...messages,
          { role: "assistant", content: [reasoning, cachePoint] },
          ...messages,
        ],
      });
      assert.equal(after.status, 400);
      assert.equal(after.json.message, CACHE_POINT_AFTER_REASONING);
      const five = await converse(claude, {
        system: [{ text: "a" }, cachePoint, { text: "b" }, cachePoint, { text: "c" }, cachePoint],
        messages: [{
          role: "user",
          content: [{ text: "d" }, cachePoint, { text: "e" }, cachePoint],
        }],
      });
      assert.equal(five.status, 400);
      assert.match(five.json.message, /maximum of 4/);
    });
  } finally {
    await mock.close();
  }
});

Deno.test("prompt cache mock: OpenAI automatic caching and Gemini implicit caching", async (t) => {
  await withMock(async (mock) => {
    const long = filler("oai", 2000);
    const chat = (messages: Json[], extra: Json = {}, key = "Bearer sk-a") =>
      call(mock, "/v1/chat/completions", { model: "gpt-5", messages, ...extra }, {
        authorization: key,
      });

    await t.step("chat: from 1024 tokens, whole 128-token steps of the shared prefix", async () => {
      const system = { role: "system", content: long };
      const first = await chat([system, { role: "user", content: "one" }]);
      assert.equal(first.json.usage.prompt_tokens_details.cached_tokens, 0);
      const second = await chat([system, { role: "user", content: "two" }]);
      const cached = second.json.usage.prompt_tokens_details.cached_tokens;
      assert.ok(cached >= 1024 && cached % 128 === 0, String(cached));
      assert.ok(cached <= second.json.usage.prompt_tokens);
      assert.ok(second.json.usage.prompt_tokens - cached < 128 + 10);
      const short = [{ role: "system", content: filler("tiny", 500) }, {
        role: "user",
        content: "x",
      }];
      await chat(short);
      assert.equal((await chat(short)).json.usage.prompt_tokens_details.cached_tokens, 0);
    });

    await t.step("chat: another prompt_cache_key or another account misses", async () => {
      const system = { role: "system", content: filler("keyed", 1500) };
      await chat([system, { role: "user", content: "a" }], { prompt_cache_key: "s1" });
      const same = await chat([system, { role: "user", content: "b" }], { prompt_cache_key: "s1" });
      assert.ok(same.json.usage.prompt_tokens_details.cached_tokens > 0);
      const other = await chat([system, { role: "user", content: "c" }], {
        prompt_cache_key: "s2",
      });
      assert.equal(other.json.usage.prompt_tokens_details.cached_tokens, 0);
      const account = await chat([system, { role: "user", content: "d" }], {
        prompt_cache_key: "s1",
      }, "Bearer sk-b");
      assert.equal(account.json.usage.prompt_tokens_details.cached_tokens, 0);
    });

    await t.step("Responses: input_tokens_details.cached_tokens", async () => {
      const body = (text: string) => ({ model: "gpt-5", instructions: long, input: text });
      await call(mock, "/v1/responses", body("r1"), { authorization: "Bearer sk-r" });
      const r = await call(mock, "/v1/responses", body("r2"), { authorization: "Bearer sk-r" });
      const u = r.json.usage;
      assert.ok(u.input_tokens_details.cached_tokens >= 1024);
      assert.equal(u.input_tokens_details.cache_write_tokens, 0);
    });

    await t.step("Gemini: cachedContentTokenCount from the model's minimum", async () => {
      const body = (text: string) => ({
        systemInstruction: { parts: [{ text: filler("gem", 3000) }] },
        contents: [{ role: "user", parts: [{ text }] }],
      });
      const path = "/v1beta/models/gemini-2.5-pro:generateContent";
      const headers = { "x-goog-api-key": "g-key" };
      await call(mock, path, body("g1"), headers);
      const r = await call(mock, path, body("g2"), headers);
      const meta = r.json.usageMetadata;
      assert.ok(meta.cachedContentTokenCount >= 2048, JSON.stringify(meta));
      assert.ok(meta.cachedContentTokenCount < meta.promptTokenCount);
      const three = "/v1beta/models/gemini-3-pro:generateContent";
      await call(mock, three, body("g3"), headers);
      const below = await call(mock, three, body("g4"), headers);
      assert.equal(below.json.usageMetadata.cachedContentTokenCount, 0, "below 3.x's 4096");
    });
  });
});
