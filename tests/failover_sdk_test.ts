/**
 * Failover seen by unmodified published SDKs (their own retries off): each route's primary is
 * down (529 / 503 / a 200 stream that fails before content), a deployment of another format
 * answers, and the SDK gets an ordinary answer in its own format.
 */
import assert from "node:assert/strict";
import { Anthropic, GoogleGenAI, OpenAI } from "./sdk/deps.ts";
import { KEY, PROVIDER_KEY, startHarness } from "./helpers.ts";

const ROUTES = [
  // Claude clients: Anthropic overloaded → an OpenAI chat deployment.
  {
    models: ["fo-claude"],
    primary: ["anthropic", "msg-err529"],
    backup: ["oai-chat", "chat-text"],
  },
  {
    models: ["fo-claude-early"],
    primary: ["anthropic", "msg-earlyerr"],
    backup: ["gemini", "gem-text"],
  },
  // OpenAI clients: the Responses provider down → Anthropic.
  { models: ["fo-gpt"], primary: ["oai", "resp-err503"], backup: ["anthropic", "msg-text"] },
  // Gemini clients: Gemini down → OpenAI Responses.
  { models: ["fo-gemini"], primary: ["gemini", "gem-err503"], backup: ["oai", "resp-text"] },
];

Deno.test("failover through real SDKs (openai, anthropic, genai): the primary is down, the answer comes", async (t) => {
  const h = await startHarness({
    tweak(config) {
      // Every primary fails every time here; cooldown has tests of its own.
      config.cooldown = { failures: 100, seconds: 30, max_seconds: 300 };
      config.routes.unshift(...ROUTES.map((r) => ({
        models: r.models,
        passthrough: false,
        targets: [
          { provider: r.primary[0], model: r.primary[1], weight: 1 },
          { provider: r.backup[0], model: r.backup[1], weight: 1 },
        ],
      })));
    },
  });
  const hello = /Hello from [\w-]+ mock: hi/;
  try {
    const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
    const params = {
      max_tokens: 100,
      messages: [{ role: "user" as const, content: "hi" }],
    };
    await t.step("anthropic: messages.create and stream", async () => {
      const m = await anthropic.messages.create({ ...params, model: "fo-claude" });
      assert.match(m.content.map((b) => b.type === "text" ? b.text : "").join(""), hello);
      for (const model of ["fo-claude", "fo-claude-early"]) {
        const stream = anthropic.messages.stream({ ...params, model });
        const final = await stream.finalMessage();
        assert.match(final.content.map((b) => b.type === "text" ? b.text : "").join(""), hello);
      }
    });

    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    await t.step("openai: chat completions and responses, JSON and stream", async () => {
      const c = await openai.chat.completions.create({
        model: "fo-gpt",
        messages: [{ role: "user", content: "hi" }],
      });
      assert.match(c.choices[0].message.content ?? "", hello);
      const r = await openai.responses.create({ model: "fo-gpt", input: "hi", store: false });
      assert.match(r.output_text, hello);
      let text = "";
      const stream = await openai.responses.create({
        model: "fo-gpt",
        input: "hi",
        stream: true,
        store: false,
      });
      for await (const e of stream) if (e.type === "response.output_text.delta") text += e.delta;
      assert.match(text, hello);
    });

    const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    await t.step("genai: generateContent and generateContentStream", async () => {
      const g = await genai.models.generateContent({ model: "fo-gemini", contents: "hi" });
      assert.match(g.text ?? "", hello);
      let text = "";
      const stream = await genai.models.generateContentStream({
        model: "fo-gemini",
        contents: "hi",
      });
      for await (const chunk of stream) text += chunk.text ?? "";
      assert.match(text, hello);
    });

    await t.step("every answer took two attempts and names its provider", () => {
      const answered = h.logs.filter((l) => String(l.model).startsWith("fo-"));
      assert.equal(answered.length, 8);
      for (const l of answered) {
        assert.equal(l.status, 200, JSON.stringify(l));
        assert.equal(l.attempts, 2, JSON.stringify(l));
      }
      assert.ok(!JSON.stringify(h.logs).includes(PROVIDER_KEY));
    });
  } finally {
    await h.close();
  }
});
