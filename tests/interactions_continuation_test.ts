/**
 * @google/genai `interactions.create` with and without automatic continuation: converted
 * routes never answer `requires_continuation` (one answer, and a token sent to them is
 * refused); on a relayed `api: interactions` route the SDK's hops run through the gateway to the
 * provider.
 */
import assert from "node:assert/strict";
import { GoogleGenAI } from "./sdk/deps.ts";
import {
  googleHeaders,
  type Harness,
  INGRESS,
  type Ingress,
  KEY,
  post,
  PROVIDER_KEY,
  startHarness,
} from "./helpers.ts";
import type { Json } from "./mock/vendor.ts";

const URL_PATH = "/v1beta/interactions";
/** A budget past the per-request cap: the mock's `int-long` answers in two hops. */
const LONG = { generation_config: { max_output_tokens: 100_000 } };
/** Both hops' text (tests/mock/long_decode.ts): the reply, then each hop's token range. */
const FIRST_HOP = "Hello from interactions mock: hi (0-65536)";
const FULL_TEXT = `${FIRST_HOP}(65536-66536)`;

type Event = {
  event_type: string;
  delta?: { type: string; text?: string };
  interaction?: { id: string; status: string; continuation_token?: string };
};

const streamedText = (events: Event[]) =>
  events.map((e) => e.event_type === "step.delta" && e.delta?.type === "text" ? e.delta.text : "")
    .join("");

const interactionCalls = (h: Harness) => h.upstream.requests.filter((r) => r.path === URL_PATH);

Deno.test("interactions continuation: converted routes answer in one hop, continuation on or off", async () => {
  const h = await startHarness();
  try {
    const client = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    for (const family of ["msg", "chat", "resp", "gem"]) {
      const model = `${family}-text`;
      const answers: string[] = [];
      for (const automatic_continuation of [undefined, false]) {
        const label = `${family} automatic_continuation=${automatic_continuation}`;
        let before = h.upstream.requests.length;
        const json = await client.interactions.create({
          model,
          input: "hi",
          automatic_continuation,
        });
        assert.equal(json.status, "completed", label);
        assert.equal(json.continuation_token, undefined, label);
        assert.equal(h.upstream.requests.length - before, 1, label);
        answers.push(json.output_text!);
        before = h.upstream.requests.length;
        const stream = await client.interactions.create({
          model,
          input: "hi",
          stream: true,
          automatic_continuation,
        });
        const events = (await Array.fromAsync(stream)) as Event[];
        const completed = events.filter((e) => e.event_type === "interaction.completed");
        assert.equal(completed.length, 1, label);
        assert.equal(completed[0].interaction!.status, "completed", label);
        assert.equal(h.upstream.requests.length - before, 1, label);
        answers.push(streamedText(events));
      }
      assert.ok(answers[0].length > 0, family);
      assert.ok(answers.every((a) => a === answers[0]), `${family}: ${JSON.stringify(answers)}`);
    }
  } finally {
    await h.close();
  }
});

Deno.test("interactions continuation: a continuation_token on a converted route is a 400 naming it", async () => {
  const h = await startHarness();
  try {
    const res = await post(h.url + URL_PATH, googleHeaders(), {
      model: "gem-text",
      input: "hi",
      continuation_token: "ct_from_elsewhere",
    });
    assert.equal(res.status, 400);
    const { error } = await res.json();
    assert.equal(error.status, "INVALID_ARGUMENT");
    assert.equal(
      error.message,
      "continuation_token: continuation tokens only work with an interactions upstream",
    );
    const client = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    await assert.rejects(
      client.interactions.create({ model: "msg-text", input: "hi", continuation_token: "ct_x" }),
      // The SDK's Interactions client throws its own BadRequestError (status and message).
      (e: Error & { status?: number }) => e.status === 400 && /continuation_token/.test(e.message),
    );
    assert.equal(h.upstream.requests.length, 0);
  } finally {
    await h.close();
  }
});

Deno.test("interactions continuation: relayed, the SDK's hops merge into one interaction", async () => {
  const h = await startHarness();
  try {
    const client = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    const merged = await client.interactions.create({ model: "int-long", input: "hi", ...LONG });
    assert.equal(merged.status, "completed");
    assert.equal(merged.output_text, FULL_TEXT);
    const [first, second] = merged.continuation_ids!;
    assert.equal(merged.continuation_ids!.length, 2);
    assert.equal(second, merged.id);
    // Steps concatenated in hop order, usage summed.
    assert.deepEqual(merged.steps!.map((s) => s.type), [
      "user_input",
      "model_output",
      "model_output",
    ]);
    // The second hop re-read the prompt and the first hop's 65,536 tokens.
    assert.equal(merged.usage!.total_input_tokens, 11 + 11 + 65_536);
    assert.equal(merged.usage!.total_output_tokens, 66_536);
    const [hop1, hop2] = interactionCalls(h);
    assert.equal(interactionCalls(h).length, 2);
    // The stored hop: the issuer as previous_interaction_id, no input, the token as issued.
    assert.equal(hop2.json!.previous_interaction_id, first);
    assert.equal(hop2.json!.input, undefined);
    assert.match(hop2.json!.continuation_token, /^ct_/);
    assert.equal(hop1.json!.continuation_token, undefined);
    for (const hop of [hop1, hop2]) {
      assert.equal(hop.headers["x-goog-api-key"], PROVIDER_KEY);
      assert.ok(!JSON.stringify(hop.headers).includes(KEY));
    }
    // With store: false the SDK sends the input again with the token.
    const unstored = await client.interactions.create({
      model: "int-long",
      input: "hi",
      store: false,
      ...LONG,
    });
    assert.equal(unstored.status, "completed");
    assert.equal(unstored.output_text, FULL_TEXT);
    const resent = interactionCalls(h).at(-1)!.json!;
    assert.equal(resent.input, "hi");
    assert.equal(resent.previous_interaction_id, undefined);
    assert.match(resent.continuation_token, /^ct_/);
  } finally {
    await h.close();
  }
});

Deno.test("interactions continuation: relayed stream yields every hop's events in order", async () => {
  const h = await startHarness();
  try {
    const client = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    const stream = await client.interactions.create({
      model: "int-long",
      input: "hi",
      stream: true,
      ...LONG,
    });
    const events = (await Array.fromAsync(stream)) as Event[];
    const marks = events.filter((e) =>
      e.event_type.startsWith("interaction.created") ||
      e.event_type === "interaction.completed"
    );
    assert.deepEqual(marks.map((e) => [e.event_type, e.interaction!.status]), [
      ["interaction.created", "in_progress"],
      ["interaction.completed", "requires_continuation"],
      ["interaction.created", "in_progress"],
      ["interaction.completed", "completed"],
    ]);
    assert.equal(streamedText(events), FULL_TEXT);
    const [, hop2] = interactionCalls(h);
    assert.equal(interactionCalls(h).length, 2);
    assert.equal(hop2.json!.continuation_token, marks[1].interaction!.continuation_token);
    assert.equal(hop2.json!.previous_interaction_id, marks[1].interaction!.id);
  } finally {
    await h.close();
  }
});

Deno.test("interactions continuation: relayed with automatic_continuation false, one hop untouched", async () => {
  const h = await startHarness();
  try {
    const client = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    const json = await client.interactions.create({
      model: "int-long",
      input: "hi",
      automatic_continuation: false,
      ...LONG,
    });
    assert.equal(json.status, "requires_continuation");
    assert.match(json.continuation_token!, /^ct_/);
    assert.equal(json.continuation_ids, undefined);
    assert.equal(json.output_text, FIRST_HOP);
    assert.equal(interactionCalls(h).length, 1);
    const stream = await client.interactions.create({
      model: "int-long",
      input: "hi",
      stream: true,
      automatic_continuation: false,
      ...LONG,
    });
    const events = (await Array.fromAsync(stream)) as Event[];
    const done = events.at(-1)!;
    assert.equal(done.event_type, "interaction.completed");
    assert.equal(done.interaction!.status, "requires_continuation");
    assert.equal(interactionCalls(h).length, 2);
    // Driven by hand: the token reaches the provider unchanged and the rest comes back.
    const rest = await client.interactions.create({
      model: "int-long",
      continuation_token: json.continuation_token,
      previous_interaction_id: json.id,
      automatic_continuation: false,
      ...LONG,
    });
    assert.equal(rest.status, "completed");
    assert.equal(json.output_text! + rest.output_text, FULL_TEXT);
    assert.equal(interactionCalls(h).at(-1)!.json!.continuation_token, json.continuation_token);
  } finally {
    await h.close();
  }
});

/** Each client format's way of saying an answer was cut short at a token limit. */
const CUT_SHORT: Record<Ingress["name"], (body: Json) => boolean> = {
  chat: (b) => b.choices[0].finish_reason === "length",
  responses: (b) => b.status === "incomplete",
  messages: (b) => b.stop_reason === "max_tokens",
  "generate-content": (b) => b.candidates[0].finishReason === "MAX_TOKENS",
  converse: (b) => b.stopReason === "max_tokens",
};

// Without a budget past the cap there is nothing to continue: Google stops at the cap (and the
// gateway runs no hop). tests/long_decode_test.ts has converting clients with budgets.
Deno.test("interactions continuation: a converting client without a budget hears the cap as cut short", async () => {
  const h = await startHarness();
  try {
    // Every client format but Interactions itself, which relays.
    for (const ingress of INGRESS.filter((i) => i.name !== "interactions")) {
      const res = await post(
        h.url + ingress.path("int-long", false),
        ingress.headers,
        ingress.body("int-long", false),
      );
      assert.equal(res.status, 200, ingress.name);
      const body = await res.json();
      assert.ok(CUT_SHORT[ingress.name](body), `${ingress.name}: ${JSON.stringify(body)}`);
    }
    const chat = INGRESS.find((i) => i.name === "chat")!;
    const sse = await post(
      h.url + chat.path("int-long", true),
      chat.headers,
      chat.body("int-long", true),
    );
    assert.match(await sse.text(), /"finish_reason":"length"/);
  } finally {
    await h.close();
  }
});
