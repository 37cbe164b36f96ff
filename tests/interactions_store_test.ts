/**
 * Stored interactions with the real @google/genai: `previous_interaction_id` over three turns,
 * `get` (JSON and the replayed stream), `delete`, `cancel`, a function-call round trip by
 * chaining, `store: false`, and per-key isolation, on Claude, chat, Responses and Gemini routes.
 */
import assert from "node:assert/strict";
import { GoogleGenAI } from "./sdk/deps.ts";
import { type Harness, HASHED_KEY, KEY, startHarness } from "./helpers.ts";

const FAMILIES = ["msg", "chat", "resp", "gem"];
const TOOLS = [{ type: "function" as const, name: "get_weather", parameters: { type: "object" } }];

const sdk = (h: Harness, key = KEY) =>
  new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.url } }).interactions;

/** What the SDK threw: its HTTP status. */
const statusOf = async (p: Promise<unknown>): Promise<number | undefined> => {
  const err = await p.then(() => undefined, (e) => e);
  assert.ok(err, "expected the call to fail");
  return (err as { status?: number }).status;
};

const lastUpstreamBody = (h: Harness) => h.upstream.requests.at(-1)!.body;

/** One test, a step per family, on one harness. */
function perFamily(
  name: string,
  families: readonly string[],
  fn: (client: ReturnType<typeof sdk>, h: Harness, family: string) => Promise<void>,
) {
  Deno.test(name, async (t) => {
    const h = await startHarness();
    try {
      for (const family of families) await t.step(family, () => fn(sdk(h), h, family));
    } finally {
      await h.close();
    }
  });
}

perFamily(
  "@google/genai interactions: three chained turns, get, delete on every family",
  FAMILIES,
  async (client, h, family) => {
    const model = `${family}-text`;
    const first = await client.create({ model, input: "The password is swordfish." });
    assert.match(first.id, /^int_[0-9a-f]{32}$/);
    const second = await client.create({
      model,
      input: "Remember it.",
      previous_interaction_id: first.id,
    });
    assert.match(lastUpstreamBody(h), /swordfish/);
    // The third turn streams; it carries the first two turns, questions and answers.
    const stream = await client.create({
      model,
      input: "What was it?",
      previous_interaction_id: second.id,
      stream: true,
    });
    const events = await Array.fromAsync(stream);
    const done = events.at(-1) as { event_type: string; interaction: { id: string } };
    assert.equal(done.event_type, "interaction.completed");
    const sent = lastUpstreamBody(h);
    assert.match(sent, /swordfish/);
    assert.match(sent, /Remember it\./);
    assert.ok(sent.includes(second.output_text!), "the second answer");

    const third = await client.get(done.interaction.id);
    assert.equal(third.id, done.interaction.id);
    assert.equal(third.status, "completed");
    assert.match(third.output_text ?? "", /What was it\?/);

    await client.delete(first.id);
    assert.equal(await statusOf(client.get(first.id)), 404);
    assert.equal(await statusOf(client.delete(first.id)), 404);
    const chained = client.create({ model, input: "x", previous_interaction_id: first.id });
    assert.equal(await statusOf(chained), 404);
    // The rest of the chain stays: turn three still continues from turn two.
    assert.equal((await client.get(second.id)).status, "completed");
  },
);

perFamily(
  "@google/genai interactions: a function call round trip by chaining",
  FAMILIES,
  async (client, h, family) => {
    const model = `${family}-tool`;
    const call = await client.create({ model, input: "Weather in Paris?", tools: TOOLS });
    assert.equal(call.status, "requires_action");
    const step = call.steps!.find((s) => s.type === "function_call") as {
      id: string;
      name: string;
    };
    const answer = await client.create({
      model,
      previous_interaction_id: call.id,
      tools: TOOLS,
      input: [{
        type: "function_result",
        call_id: step.id,
        name: step.name,
        result: "18 degrees and sunny",
      }],
    });
    assert.equal(answer.status, "completed");
    assert.equal(answer.output_text, "Tool said: 18 degrees and sunny");
    // The call went back upstream with its result, from the stored chain.
    assert.match(lastUpstreamBody(h), /Weather in Paris\?/);
  },
);

/** What each family's mock signs its reasoning with (tests/mock/scenario.ts `signature`). */
const SIGNED: Record<string, string> = { msg: "thinking", gem: "thought", resp: "reasoning" };

perFamily(
  "@google/genai interactions: thinking in a chained tool loop reaches its family signed",
  Object.keys(SIGNED),
  async (client, h, family) => {
    const model = `${family}-think-tool`;
    // Streamed: the kept interaction is gathered from the stream, signatures included.
    const events = await Array.fromAsync(
      await client.create({ model, input: "Weather in Paris?", tools: TOOLS, stream: true }),
    );
    const id = (events[0] as { interaction: { id: string } }).interaction.id;
    const call = await client.get(id);
    const step = call.steps!.find((s) => s.type === "function_call") as { id: string };
    await client.create({
      model,
      previous_interaction_id: call.id,
      tools: TOOLS,
      input: [{ type: "function_result", call_id: step.id, name: "get_weather", result: "sunny" }],
    });
    const signature = btoa(`mock-${SIGNED[family]}:${model}`);
    assert.ok(lastUpstreamBody(h).includes(signature), "signature upstream");
  },
);

Deno.test("@google/genai interactions: another key's id and store:false are not found", async () => {
  const h = await startHarness();
  const mine = sdk(h);
  const theirs = sdk(h, HASHED_KEY);
  try {
    const kept = await mine.create({ model: "gem-text", input: "private" });
    assert.equal(await statusOf(theirs.get(kept.id)), 404);
    assert.equal(await statusOf(theirs.delete(kept.id)), 404);
    const chained = theirs.create({
      model: "gem-text",
      input: "x",
      previous_interaction_id: kept.id,
    });
    assert.equal(await statusOf(chained), 404);
    assert.equal((await mine.get(kept.id)).id, kept.id, "still there for its own key");

    const unkept = await mine.create({ model: "msg-text", input: "forget me", store: false });
    assert.doesNotMatch(unkept.id, /^int_/, "an unkept interaction keeps the upstream's id");
    assert.equal(await statusOf(mine.get(unkept.id)), 404);
    const later = mine.create({
      model: "msg-text",
      input: "x",
      previous_interaction_id: unkept.id,
    });
    assert.equal(await statusOf(later), 404);
  } finally {
    await h.close();
  }
});

Deno.test("@google/genai interactions: a zero-retention route keeps nothing, chaining is a 400", async () => {
  const h = await startHarness({ tweak: (c) => void (c.response_store.enabled = false) });
  const client = sdk(h);
  try {
    const answered = await client.create({ model: "chat-text", input: "hi" });
    assert.equal(await statusOf(client.get(answered.id)), 404);
    const err = await client.create({
      model: "chat-text",
      input: "x",
      previous_interaction_id: answered.id,
    }).catch((e) => e);
    assert.equal(err.status, 400);
    assert.match(String(err.message), /previous_interaction_id: this route keeps no interactions/);
  } finally {
    await h.close();
  }
});

const googleGet = (h: Harness, path: string, init: RequestInit = {}) =>
  fetch(`${h.url}/v1beta/interactions/${path}`, {
    ...init,
    headers: { "x-goog-api-key": KEY },
  });

Deno.test("interactions: GET ?stream=true replays the stored events, last_event_id resumes", async () => {
  const h = await startHarness();
  try {
    const kept = await sdk(h).create({ model: "chat-text", input: "hi" });
    const replayed = await Array.fromAsync(await sdk(h).get(kept.id, { stream: true }));
    const types = replayed.map((e) => e.event_type);
    assert.deepEqual(types, [
      "interaction.created",
      "interaction.status_update",
      "step.start",
      "step.stop",
      "interaction.completed",
    ]);
    const start = replayed[2] as { step: unknown };
    assert.deepEqual(start.step, kept.steps![0]);
    const ids = replayed.map((e) => (e as { event_id?: string }).event_id);
    const resumed = await googleGet(h, `${kept.id}?stream=true&last_event_id=${ids[2]}`);
    const text = await resumed.text();
    assert.equal(text.match(/^data: /gm)?.length, 2);
    assert.match(text, /"event_type":"step.stop"/);
    const bad = await googleGet(h, `${kept.id}?stream=true&last_event_id=nope`);
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error.message, /last_event_id/);
  } finally {
    await h.close();
  }
});

Deno.test("@google/genai interactions.cancel: a streaming interaction is cancelled, others not", async () => {
  const h = await startHarness();
  const client = sdk(h);
  try {
    const stream = await client.create({
      model: "gem-slow-chunks9-text",
      input: "hi",
      stream: true,
    });
    const events = [];
    for await (const e of stream) {
      events.push(e);
      if (e.event_type === "step.delta") {
        const id = (events[0] as { interaction: { id: string } }).interaction.id;
        const cancelled = await client.cancel(id);
        assert.equal(cancelled.status, "cancelled");
      }
    }
    const end = events.at(-1) as { event_type: string; interaction: { status: string } };
    assert.equal(end.event_type, "interaction.completed");
    assert.equal(end.interaction.status, "cancelled");
    assert.ok(events.filter((e) => e.event_type === "step.delta").length < 9, "cut short");
    const id = (events[0] as { interaction: { id: string } }).interaction.id;
    assert.equal(await statusOf(client.get(id)), 404, "a cancelled interaction is not kept");

    const ended = await client.create({ model: "gem-text", input: "hi" });
    assert.equal(await statusOf(client.cancel(ended.id)), 400);
    assert.equal(await statusOf(client.cancel("int_0123456789abcdef0123456789abcdef")), 404);
  } finally {
    await h.close();
  }
});
