/**
 * Bad input gets a clear error, never a crash: every field of a rich request in each client
 * format, replaced by each value of the wrong shape, sent to each provider API. Every answer
 * must be a success or a 4xx in the client's dialect with a message — never a 5xx.
 */
import assert from "node:assert/strict";
import { CLIENTS, post, startHarness } from "./helpers.ts";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const WRONG: Json[] = [null, 1, -1, "x", [], {}, true, [1], [{}], [null], { type: "x" }, [{
  type: "x",
}]];

/** Requests that touch most of each format: system, media, tools, a tool round trip. */
const RICH: Record<string, Record<string, Json>> = {
  chat: {
    messages: [
      { role: "system", content: "s" },
      {
        role: "user",
        content: [{ type: "text", text: "hi" }, {
          type: "image_url",
          image_url: { url: "data:image/png;base64,AAAA" },
        }],
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "r" },
    ],
    tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
    tool_choice: "auto",
    max_tokens: 10,
    temperature: 0.5,
    stop: ["x"],
  },
  responses: {
    input: [
      { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "r" },
    ],
    instructions: "i",
    tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
    reasoning: { effort: "low" },
    text: { format: { type: "text" } },
  },
  messages: {
    max_tokens: 100,
    system: [{ type: "text", text: "s" }],
    messages: [
      { role: "user", content: [{ type: "text", text: "hi" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "r" }] },
    ],
    tools: [{ name: "f", input_schema: { type: "object" } }],
    tool_choice: { type: "auto" },
    thinking: { type: "enabled", budget_tokens: 2000 },
  },
  "generate-content": {
    contents: [
      { role: "user", parts: [{ text: "hi" }] },
      { role: "model", parts: [{ functionCall: { name: "f", args: {} } }] },
      { role: "user", parts: [{ functionResponse: { name: "f", response: { output: "r" } } }] },
    ],
    systemInstruction: { parts: [{ text: "s" }] },
    tools: [{ functionDeclarations: [{ name: "f", parameters: { type: "OBJECT" } }] }],
    generationConfig: { temperature: 0.5, thinkingConfig: { thinkingBudget: 100 } },
  },
};
// Vertex AI's: Claude's body with Vertex's version (the path names the model), Gemini's as is.
RICH["vertex-messages"] = { anthropic_version: "vertex-2023-10-16", ...RICH.messages };
RICH["vertex-generate-content"] = RICH["generate-content"];

/** Formats whose path names the model (their body has none). */
const MODEL_IN_PATH = ["generate-content", "vertex-messages", "vertex-generate-content"];

/** Every (path, wrong value) pair inside a document. */
function* mutations(doc: Json, path: (string | number)[] = []): Generator<(string | number)[]> {
  if (doc === null || typeof doc !== "object") return;
  for (const [k, child] of Object.entries(doc)) {
    const at = [...path, Array.isArray(doc) ? Number(k) : k];
    yield at;
    yield* mutations(child, at);
  }
}

function replaced(doc: Json, path: (string | number)[], value: Json): Json {
  const copy = structuredClone(doc) as Record<string | number, Json>;
  let node = copy;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, Json>;
  node[path.at(-1)!] = value;
  return copy;
}

/** The error message, wherever each dialect keeps it. */
const messageOf = (body: { error?: { message?: string } }) => body.error?.message;

Deno.test("malformed input: never a 5xx, always a message in the client's dialect", async () => {
  const h = await startHarness();
  let checked = 0;
  try {
    for (const c of CLIENTS) {
      for (const prefix of ["chat", "resp", "msg", "gem"]) {
        const model = `${prefix}-text`;
        const base: Json = MODEL_IN_PATH.includes(c.name)
          ? RICH[c.name]
          : { model, ...RICH[c.name] };
        for (const path of mutations(base)) {
          if (path[0] === "model") continue;
          for (const value of WRONG) {
            const res = await post(
              h.url + c.path(model, false),
              c.headers,
              replaced(base, path, value),
            );
            const text = await res.text();
            const where = `${c.name} → ${prefix}: ${path.join(".")} = ${JSON.stringify(value)}`;
            assert.ok(res.status < 500, `${where}: ${res.status} ${text.slice(0, 300)}`);
            if (res.status >= 400) assert.ok(messageOf(JSON.parse(text)), `${where}: ${text}`);
            checked++;
          }
        }
      }
    }
  } finally {
    await h.close();
  }
  assert.ok(checked > 5000, `only ${checked} requests`);
});
