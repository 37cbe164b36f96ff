/**
 * The published SDKs on stored responses and model lists: the `openai` SDK's
 * `responses.retrieve`, `responses.inputItems.list`, `responses.delete` and a chained
 * `previous_response_id` call on a Claude-routed (Anthropic messages) and a Gemini-routed
 * model; the Anthropic SDK's `models.list` and the Gemini SDK's `models.get` against the gateway
 * (its `models.list` is refused: the interface lists models at GET /v1/models only).
 */
import assert from "node:assert/strict";
import { GEMINI, KEY, MESSAGES, model, replyText, startHarness, step, USER } from "./common.ts";
import { Anthropic, ApiError, GoogleGenAI, OpenAI } from "./deps.ts";

const CATALOG = [
  {
    id: "msg-opus",
    display_name: "Opus (mock)",
    context_window: 200_000,
    max_output_tokens: 32_000,
  },
  { id: "gem-pro", context_window: 1_048_576, max_output_tokens: 65_536 },
];

Deno.test("sdk stored responses: retrieve, inputItems.list, delete, chaining", async (t) => {
  const h = await startHarness();
  const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
  try {
    for (const p of [MESSAGES, GEMINI]) {
      await step(
        t,
        h,
        `${p.label}: create, chain, retrieve, list input items, delete`,
        async () => {
          const first = await openai.responses.create({ model: model(p, "text"), input: USER });
          assert.equal(first.output_text, replyText(p));
          const second = await openai.responses.create({
            model: model(p, "text"),
            input: "And again?",
            previous_response_id: first.id,
          });
          assert.equal(second.previous_response_id, first.id);
          assert.match(h.upstream.requests.at(-1)!.body, new RegExp(replyText(p)));

          const got = await openai.responses.retrieve(second.id);
          assert.equal(got.id, second.id);
          assert.equal(got.output_text, second.output_text);

          const items = [];
          for await (const item of openai.responses.inputItems.list(second.id, { limit: 1 })) {
            items.push(item);
          }
          // first input, first answer, second input: the SDK followed `after` page by page
          assert.equal(items.length, 3);
          assert.equal(items[0].type, "message");

          // A stream chained on a stored response.
          const stream = openai.responses.stream({
            model: model(p, "text"),
            input: "Once more",
            previous_response_id: second.id,
          });
          const final = await stream.finalResponse();
          assert.equal(final.previous_response_id, second.id);

          await openai.responses.delete(first.id);
          const err = await openai.responses.retrieve(first.id).catch((e) => e);
          assert.ok(err instanceof OpenAI.NotFoundError, String(err));
          const chained = await openai.responses.create({
            model: model(p, "text"),
            input: "x",
            previous_response_id: first.id,
          }).catch((e) => e);
          assert.ok(chained instanceof OpenAI.BadRequestError, String(chained));
          assert.equal(chained.code, "previous_response_not_found");
        },
      );
    }
  } finally {
    await h.close();
  }
});

Deno.test("sdk model lists: Anthropic and Gemini SDKs", async (t) => {
  const h = await startHarness({
    tweak: (c) => {
      c.catalog = CATALOG;
      // The demo provider lists its own models (tests/model_lists_test.ts): not these lists'.
      c.routes = c.routes.filter((r) => r.provider !== "demo");
    },
  });
  try {
    await step(t, h, "@anthropic-ai/sdk models.list and retrieve", async () => {
      const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
      const ids = [];
      for await (const m of anthropic.models.list()) ids.push(m.id);
      assert.deepEqual(ids, ["msg-opus", "gem-pro"]);
      const opus = await anthropic.models.retrieve("msg-opus");
      assert.equal(opus.display_name, "Opus (mock)");
    });
    await step(
      t,
      h,
      "@google/genai models.list refused (404 naming GET /v1/models), get",
      async () => {
        const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
        const err = await genai.models.list().catch((e) => e);
        assert.ok(err instanceof ApiError, String(err));
        assert.equal(err.status, 404);
        assert.match(err.message, /list models with GET \/v1\/models/);
        const pro = await genai.models.get({ model: "gem-pro" });
        assert.equal(pro.inputTokenLimit, 1_048_576);
        assert.equal(pro.outputTokenLimit, 65_536);
      },
    );
  } finally {
    await h.close();
  }
});
