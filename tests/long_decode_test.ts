/**
 * Long decode on converted routes, through the official clients: a Gemini upstream that stops
 * an answer at its per-request cap with `CONTINUATION` and a token (the mock's `longN` models,
 * tests/mock/long_decode.ts) is sent the same request again with the token, and every client
 * format gets one whole answer — a stream as one message, a JSON answer whole — with the last
 * hop's stop and the hops' usage summed. Budgets, `long_decode` (`max_hops`, `off`), a client
 * that leaves and a hop that fails stop the hops as docs/conversion.md says.
 */
import assert from "node:assert/strict";
import { Anthropic, GoogleGenAI, OpenAI } from "./sdk/deps.ts";
import { type Harness, KEY, PROVIDER_KEY, startHarness, wsExchange } from "./helpers.ts";
import type { RecordedRequest } from "./mock/upstream.ts";
import type { Config } from "../src/config/config.ts";
import { modelCalls, startVertexGateway } from "./vertex_harness.ts";

const USER = "write it all";
/** `gem-long3`'s three hops as a client must read them: each hop's text once, in order. */
const HOP1 = `Hello from generate-content mock: ${USER} (0-65536)`;
const WHOLE = `${HOP1}(65536-131072)(131072-132072)`;
/** The budget every client sets: past all three hops (Google's per-request cap is 65,536). */
const BUDGET = 200_000;
/**
 * Summed over the hops: each re-reads the prompt (11) and the answer so far (0, 65,536,
 * 131,072), and bills its cache read (3).
 */
const USAGE = { input: 11 * 3 + 65_536 + 131_072, output: 132_072, cached: 9 };

/**
 * Extra routes to the Gemini provider: `capped-*` stops after two hops, `single-*` runs none;
 * `twin-*` has a second Gemini target to fail over to.
 */
function routes(config: Config) {
  const gemini = config.routes.find((r) => r.models.includes("gem-*"))!;
  const provider = config.providers.find((p) => p.name === "gemini")!;
  config.providers.push({ ...provider, name: "gemini-twin" });
  config.routes.push(
    { ...gemini, models: ["capped-*"], long_decode: { mode: "auto", max_hops: 2 } },
    { ...gemini, models: ["single-*"], long_decode: { mode: "off", max_hops: 32 } },
    {
      ...gemini,
      models: ["twin-*"],
      provider: undefined,
      targets: [{ provider: "gemini", weight: 1 }, { provider: "gemini-twin", weight: 1 }],
    },
  );
}

const harness = () => startHarness({ tweak: routes });

const generations = (h: Harness) =>
  h.upstream.requests.filter((r) => /:(stream)?[gG]enerateContent$/.test(r.path));

/** Every hop after the first is the first request again with its token, on the same key. */
function assertHops(calls: RecordedRequest[], n: number, label: string) {
  assert.equal(calls.length, n, `${label}: upstream calls`);
  const [first, ...later] = calls;
  assert.equal(first.json!.continuationToken, undefined, label);
  for (const hop of later) {
    const { continuationToken, ...rest } = hop.json!;
    assert.match(continuationToken, /^ct_/, label);
    assert.deepEqual(rest, first.json, `${label}: the request resent unchanged`);
    assert.equal(hop.path, first.path, label);
    assert.equal(hop.headers["x-goog-api-key"], PROVIDER_KEY, label);
  }
}

const openai = (h: Pick<Harness, "url">) =>
  new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
// An explicit timeout: without one the SDK refuses a non-streaming call with a large max_tokens.
const anthropic = (h: Harness) =>
  new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0, timeout: 60_000 });

Deno.test("long decode: OpenAI chat, streamed and whole, three hops as one answer", async () => {
  const h = await harness();
  try {
    const client = openai(h);
    const messages = [{ role: "user" as const, content: USER }];
    const stream = await client.chat.completions.create({
      model: "gem-long3",
      messages,
      max_completion_tokens: BUDGET,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await Array.fromAsync(stream);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    assert.equal(text, WHOLE);
    // One message: one id, one opening role, one finish.
    assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
    assert.equal(chunks.filter((c) => c.choices[0]?.delta.role).length, 1);
    const finishes = chunks.flatMap((c) => c.choices[0]?.finish_reason ?? []);
    assert.deepEqual(finishes, ["stop"]);
    const usage = chunks.at(-1)!.usage!;
    assert.equal(usage.prompt_tokens, USAGE.input);
    assert.equal(usage.completion_tokens, USAGE.output);
    assert.equal(usage.prompt_tokens_details?.cached_tokens, USAGE.cached);
    assertHops(generations(h), 3, "stream");
    const line = h.logs.at(-1)!;
    assert.equal(line.hops, 2);
    assert.equal(line.attempts, 1);
    assert.deepEqual(line.usage, {
      inputTokens: USAGE.input,
      outputTokens: USAGE.output,
      cacheReadTokens: USAGE.cached,
    });

    // A whole answer whose budget is past 32,768: streamed upstream (Google refuses a larger
    // non-streaming request) and assembled.
    const before = generations(h).length;
    const json = await client.chat.completions.create({
      model: "gem-long3",
      messages,
      max_completion_tokens: BUDGET,
    });
    assert.equal(json.choices[0].message.content, WHOLE);
    assert.equal(json.choices[0].finish_reason, "stop");
    assert.equal(json.usage!.prompt_tokens, USAGE.input);
    assert.equal(json.usage!.completion_tokens, USAGE.output);
    const calls = generations(h).slice(before);
    assertHops(calls, 3, "json");
    assert.ok(calls.every((c) => c.path.endsWith(":streamGenerateContent")), "streamed upstream");

    // A budget within 32,768 stays non-streaming: one hop, cut at the budget.
    const small = await client.chat.completions.create({
      model: "gem-long3",
      messages,
      max_completion_tokens: 30_000,
    });
    assert.equal(small.choices[0].finish_reason, "length");
    assert.equal(
      small.choices[0].message.content,
      `Hello from generate-content mock: ${USER} (0-30000)`,
    );
    assert.match(generations(h).at(-1)!.path, /:generateContent$/);
  } finally {
    await h.close();
  }
});

Deno.test("long decode: OpenAI Responses, streamed and whole", async () => {
  const h = await harness();
  try {
    const client = openai(h);
    const stream = await client.responses.create({
      model: "gem-long3",
      input: USER,
      max_output_tokens: BUDGET,
      stream: true,
    });
    const events = await Array.fromAsync(stream);
    const types = events.map((e) => e.type);
    assert.equal(types.filter((t) => t === "response.created").length, 1);
    assert.equal(types.filter((t) => t === "response.output_item.added").length, 1);
    const done = events.at(-1)!;
    assert.equal(done.type, "response.completed");
    const response = (done as { response: OpenAI.Responses.Response }).response;
    assert.equal(response.output_text ?? textOf(response), WHOLE);
    assert.equal(response.usage!.input_tokens, USAGE.input);
    assert.equal(response.usage!.output_tokens, USAGE.output);
    const json = await client.responses.create({
      model: "gem-long3",
      input: USER,
      max_output_tokens: BUDGET,
    });
    assert.equal(json.status, "completed");
    assert.equal(json.output_text, WHOLE);
    assert.equal(json.usage!.output_tokens, USAGE.output);
    assertHops(generations(h).slice(3), 3, "json");
  } finally {
    await h.close();
  }
});

/** A Responses answer's text from its output items (the SDK computes `output_text` on `create`). */
function textOf(r: OpenAI.Responses.Response): string {
  return r.output.flatMap((i) =>
    i.type === "message" ? i.content.map((c) => (c.type === "output_text" ? c.text : "")) : []
  ).join("");
}

Deno.test("long decode: Anthropic Messages, one text block across the hops", async () => {
  const h = await harness();
  try {
    const client = anthropic(h);
    const params = {
      model: "gem-long3",
      max_tokens: BUDGET,
      messages: [{ role: "user" as const, content: USER }],
    };
    const stream = client.messages.stream(params);
    const events: string[] = [];
    stream.on("streamEvent", (e) => events.push(e.type));
    const message = await stream.finalMessage();
    assert.equal(events.filter((t) => t === "message_start").length, 1);
    // The hop boundaries cut no block: the text is one block, started and stopped once.
    assert.equal(events.filter((t) => t === "content_block_start").length, 1);
    assert.equal(events.filter((t) => t === "content_block_stop").length, 1);
    assert.deepEqual(message.content.map((b) => b.type), ["text"]);
    assert.equal((message.content[0] as { text: string }).text, WHOLE);
    assert.equal(message.stop_reason, "end_turn");
    // Anthropic's input excludes cache reads.
    assert.equal(message.usage.input_tokens, USAGE.input - USAGE.cached);
    assert.equal(message.usage.cache_read_input_tokens, USAGE.cached);
    assert.equal(message.usage.output_tokens, USAGE.output);
    const json = await client.messages.create(params);
    assert.deepEqual(json.content, [{ type: "text", text: WHOLE }]);
    assert.equal(json.stop_reason, "end_turn");
    assert.equal(json.usage.output_tokens, USAGE.output);
    assertHops(generations(h).slice(3), 3, "json");
  } finally {
    await h.close();
  }
});

Deno.test("long decode: Gemini and Interactions clients converted to the other's upstream", async () => {
  const h = await harness();
  try {
    const client = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    // A Gemini client on the Interactions route: the gateway runs the hops, the SDK's own
    // automatic continuation (on by default) sees one finished answer.
    const interactionText =
      `Hello from interactions mock: ${USER} (0-65536)(65536-131072)(131072-132072)`;
    const chunks = await Array.fromAsync(
      await client.models.generateContentStream({
        model: "int-long3",
        contents: USER,
        config: { maxOutputTokens: BUDGET },
      }),
    );
    assert.equal(chunks.map((c) => c.text ?? "").join(""), interactionText);
    assert.deepEqual(chunks.flatMap((c) => c.candidates?.[0]?.finishReason ?? []), ["STOP"]);
    assert.equal(chunks.at(-1)!.usageMetadata!.candidatesTokenCount, USAGE.output);
    const interactionCalls = h.upstream.requests.filter((r) => r.path === "/v1beta/interactions");
    assert.equal(interactionCalls.length, 3);
    const [first, ...later] = interactionCalls;
    for (const hop of later) {
      const { continuation_token, ...rest } = hop.json!;
      assert.match(continuation_token, /^ct_/);
      // The gateway sends store: false, so a hop is the same body again with the token.
      assert.deepEqual(rest, first.json);
    }

    // An Interactions client on the Gemini route: one interaction, completed.
    const interaction = await client.interactions.create({
      model: "gem-long3",
      input: USER,
      generation_config: { max_output_tokens: BUDGET },
    });
    assert.equal(interaction.status, "completed");
    assert.equal(interaction.output_text, WHOLE);
    assert.equal(interaction.continuation_token, undefined);
    const stream = await client.interactions.create({
      model: "gem-long3",
      input: USER,
      generation_config: { max_output_tokens: BUDGET },
      stream: true,
    });
    const events = (await Array.fromAsync(stream)) as {
      event_type: string;
      delta?: { type: string; text?: string };
      interaction?: { status: string };
    }[];
    const types = events.map((e) => e.event_type);
    assert.equal(types.filter((t) => t === "interaction.created").length, 1);
    assert.equal(types.filter((t) => t === "step.start").length, 1);
    assert.equal(events.at(-1)!.interaction!.status, "completed");
    const text = events.map((e) => (e.delta?.type === "text" ? e.delta.text : "")).join("");
    assert.equal(text, WHOLE);
    assertHops(generations(h).slice(-3), 3, "interactions stream");
  } finally {
    await h.close();
  }
});

Deno.test("long decode: Responses WebSocket (Codex's transport), three hops in one response", async () => {
  const h = await harness();
  try {
    const [events] = await wsExchange(h.url, [{
      type: "response.create",
      model: "gem-long3",
      input: USER,
      max_output_tokens: BUDGET,
    }]);
    const done = events.at(-1)!;
    assert.equal(done.type, "response.completed");
    const text = events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : []))
      .join("");
    assert.equal(text, WHOLE);
    assert.equal(events.filter((e) => e.type === "response.created").length, 1);
    assertHops(generations(h), 3, "ws");
  } finally {
    await h.close();
  }
});

Deno.test("long decode: the client's budget is a total across hops", async () => {
  const h = await harness();
  try {
    const client = openai(h);
    const stream = await client.chat.completions.create({
      model: "gem-long3",
      messages: [{ role: "user", content: USER }],
      max_completion_tokens: 100_000,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await Array.fromAsync(stream);
    // Google spends the rest of the budget in the second hop and stops there.
    assert.equal(
      chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""),
      `${HOP1}(65536-100000)`,
    );
    assert.deepEqual(chunks.flatMap((c) => c.choices[0]?.finish_reason ?? []), ["length"]);
    assert.equal(chunks.at(-1)!.usage!.completion_tokens, 100_000);
    assertHops(generations(h), 2, "budget");
    // Anthropic's max_tokens is the same total.
    const message = await anthropic(h).messages.create({
      model: "gem-long3",
      max_tokens: 100_000,
      messages: [{ role: "user", content: USER }],
    });
    assert.equal(message.stop_reason, "max_tokens");
    assert.equal(message.usage.output_tokens, 100_000);
    // A provider that would go on past the budget gets no further hop from the gateway.
    const before = generations(h).length;
    const overrun = await anthropic(h).messages.create({
      model: "gem-long3-overrun",
      max_tokens: 100_000,
      messages: [{ role: "user", content: USER }],
    });
    assert.equal(overrun.stop_reason, "max_tokens");
    assert.equal(overrun.usage.output_tokens, 2 * 65_536);
    assert.equal(generations(h).length - before, 2);
  } finally {
    await h.close();
  }
});

Deno.test("long decode: max_hops ends with a length stop, mode off with the first hop's", async () => {
  const h = await harness();
  try {
    const client = anthropic(h);
    const ask = (model: string) =>
      client.messages.stream({
        model,
        max_tokens: BUDGET,
        messages: [{ role: "user", content: USER }],
      }).finalMessage();
    const capped = await ask("capped-long3");
    assert.equal(capped.stop_reason, "max_tokens");
    assert.equal(
      (capped.content[0] as { text: string }).text,
      `Hello from generate-content mock: ${USER} (0-65536)(65536-131072)`,
    );
    assert.equal(capped.usage.output_tokens, 2 * 65_536);
    assert.equal(generations(h).length, 2);
    const off = await ask("single-long3");
    assert.equal(off.stop_reason, "max_tokens");
    assert.equal((off.content[0] as { text: string }).text, HOP1);
    assert.equal(generations(h).length, 3);
  } finally {
    await h.close();
  }
});

Deno.test("long decode: a client that leaves mid-answer gets no further hop", async () => {
  const h = await harness();
  try {
    const ctrl = new AbortController();
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "gem-long3-slow",
        messages: [{ role: "user", content: USER }],
        max_completion_tokens: BUDGET,
        stream: true,
      }),
      signal: ctrl.signal,
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.match(first, /chat\.completion\.chunk/);
    ctrl.abort();
    await reader.cancel().catch(() => {});
    // The slow hop would still take a second: the abort reaches the provider, and no hop follows.
    for (let i = 0; i < 100 && h.upstream.aborted === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(h.upstream.aborted, 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(generations(h).length, 1);
  } finally {
    await h.close();
  }
});

Deno.test("long decode: a hop that fails after the first ends the answer as interrupted", async () => {
  const h = await harness();
  try {
    const client = openai(h);
    for (const model of ["gem-long3-hopfail2", "gem-long3-hopcut2", "gem-long3-hoperr2"]) {
      const stream = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: USER }],
        max_completion_tokens: BUDGET,
        stream: true,
      });
      let text = "";
      const failed = await (async () => {
        try {
          for await (const c of stream) text += c.choices[0]?.delta.content ?? "";
        } catch (e) {
          return e as Error;
        }
      })();
      // The openai SDK throws on the gateway's in-stream error: never a finish_reason "stop".
      assert.ok(failed instanceof OpenAI.APIError, `${model}: ${failed}`);
      assert.match(failed.message, /long decode hop 2 failed/);
      assert.ok(text.startsWith(HOP1), `${model}: ${text}`);
      const line = h.logs.at(-1)!;
      assert.equal(line.interrupted, true, model);
      // The first hop was billed: its usage counts.
      assert.equal((line.usage as { outputTokens: number }).outputTokens, 65_536, model);
    }
    // A whole answer: the format's 502, and the route's other target does not redo it.
    for (const model of ["twin-long3-hopfail2", "twin-long3-hoperr2"]) {
      const before = generations(h).length;
      const refused = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: USER }],
        max_completion_tokens: BUDGET,
      }).catch((e) => e);
      assert.ok(refused instanceof OpenAI.APIError, model);
      assert.equal(refused.status, 502, model);
      assert.match(refused.message, /long decode hop 2 failed/, model);
      assert.equal(generations(h).length - before, 2, model);
      const line = h.logs.at(-1)!;
      assert.equal((line.usage as { outputTokens: number }).outputTokens, 65_536, model);
    }
    const message = await anthropic(h).messages.create({
      model: "gem-long3-hopcut2",
      max_tokens: BUDGET,
      messages: [{ role: "user", content: USER }],
    }).catch((e) => e);
    assert.ok(message instanceof Anthropic.APIError);
    assert.equal(message.status, 502);
  } finally {
    await h.close();
  }
});

Deno.test("long decode: on a platform (Vertex AI Gemini), the hops go the platform's way", async () => {
  const h = await startVertexGateway();
  try {
    const chunks = await Array.fromAsync(
      await openai(h).chat.completions.create({
        model: "vg-long3",
        messages: [{ role: "user", content: USER }],
        max_completion_tokens: BUDGET,
        stream: true,
      }),
    );
    assert.equal(
      chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""),
      WHOLE,
    );
    const calls = modelCalls(h.vertex);
    assert.ok(
      calls.every((c) =>
        /\/publishers\/google\/models\/vg-long3:streamGenerateContent$/.test(c.path)
      ),
    );
    assert.equal(calls.length, 3);
    assert.deepEqual(calls.map((c) => c.json!.continuationToken === undefined), [
      true,
      false,
      false,
    ]);
  } finally {
    await h.close();
  }
});
