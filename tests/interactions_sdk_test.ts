/** @google/genai `client.interactions.create` against the gateway on converted routes. */
import assert from "node:assert/strict";
import { GoogleGenAI } from "./sdk/deps.ts";
import { KEY, startHarness } from "./helpers.ts";

const TOOLS = [{ type: "function" as const, name: "get_weather", parameters: { type: "object" } }];

Deno.test("@google/genai interactions.create: text and a tool call on Claude, chat, Responses and Gemini routes", async () => {
  const h = await startHarness();
  try {
    const client = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    for (const family of ["msg", "chat", "resp", "gem"]) {
      const text = await client.interactions.create({ model: `${family}-text`, input: "hi" });
      assert.equal(text.status, "completed", family);
      assert.ok(text.output_text && text.output_text.length > 0, family);
      const stream = await client.interactions.create({
        model: `${family}-tool`,
        input: "weather?",
        tools: TOOLS,
        stream: true,
      });
      const events = await Array.fromAsync(stream);
      assert.equal(events[0].event_type, "interaction.created", family);
      const done = events.at(-1) as { event_type: string; interaction: { status: string } };
      assert.equal(done.event_type, "interaction.completed", family);
      assert.equal(done.interaction.status, "requires_action", family);
    }
  } finally {
    await h.close();
  }
});
