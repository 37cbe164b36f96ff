/**
 * The Open Responses specification's compliance cases (spec 2026-04-24, tests/specs/)
 * against every provider family the gateway converts to: chat, Anthropic messages, Gemini,
 * and a Responses provider without `passthrough`. Each JSON answer is validated against the
 * spec's `ResponseResource` and each stream event against its own streaming event schema, with
 * a JSON Schema 2020-12 validator (ajv, test-only).
 */
import assert from "node:assert/strict";
// Test-only, so not in the import map (which `deno task dev/start` installs whole).
// deno-lint-ignore no-import-prefix
import { Ajv2020 } from "npm:ajv@8.17.1/dist/2020.js";
import { type Harness, KEY, openaiHeaders, post, startHarness } from "./helpers.ts";

const SPEC_URL = new URL("./specs/openresponses-openapi-2026-04-24.json", import.meta.url);
const spec = JSON.parse(Deno.readTextFileSync(SPEC_URL));

// deno-lint-ignore no-explicit-any
type Validator = ((v: unknown) => boolean) & { errors?: any[] | null };
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema({ $id: "spec", components: spec.components });
const schema = (name: string) => ajv.getSchema(`spec#/components/schemas/${name}`) as Validator;
const responseResource = schema("ResponseResource");

/** Streaming event type → its schema, from the spec's text/event-stream `oneOf`. */
const EVENT_SCHEMAS = new Map<string, Validator>(
  (spec.paths["/responses"].post.responses["200"].content["text/event-stream"].schema.oneOf as {
    $ref: string;
  }[]).map(({ $ref }) => {
    const name = $ref.split("/").at(-1)!;
    const type = spec.components.schemas[name].properties.type.enum[0] as string;
    return [type, schema(name)];
  }),
);

function assertValid(v: Validator, value: unknown, label: string) {
  const ok = v(value);
  assert.ok(
    ok,
    `${label}: ${JSON.stringify(v.errors?.slice(0, 5), null, 1)}\n${
      JSON.stringify(value).slice(0, 1500)
    }`,
  );
}

type Json = Record<string, unknown>;

/** A stream's events, each validated against its schema; returns them in order. */
async function streamEvents(res: Response, label: string): Promise<Json[]> {
  assert.equal(res.status, 200, label);
  const text = await res.text();
  const events: Json[] = [];
  for (const block of text.split("\n\n")) {
    const data = block.split("\n").find((l) => l.startsWith("data: "))?.slice(6);
    if (!data || data === "[DONE]") continue;
    const event = JSON.parse(data);
    const v = EVENT_SCHEMAS.get(event.type);
    assert.ok(v, `${label}: event type ${event.type} has no schema in the spec`);
    assertValid(v, event, `${label}: ${event.type}`);
    events.push(event);
  }
  return events;
}

/** The JSON answer, validated as a `ResponseResource`. */
async function jsonResponse(res: Response, label: string): Promise<Json> {
  const body = await res.json();
  assert.equal(res.status, 200, `${label}: ${JSON.stringify(body)}`);
  assertValid(responseResource, body, label);
  return body;
}

const FAMILIES = { chat: "chat", messages: "msg", gemini: "gem", responses: "resp" } as const;

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const PDF = btoa("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF");

const WEATHER_TOOL = {
  type: "function",
  name: "get_weather",
  description: "Weather for a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
  },
};

/** The spec's compliance cases: a request body for a model, and what the answer must show. */
const CASES: {
  name: string;
  scenario: string;
  body: (model: string) => Json;
  check?: (r: Json, h: Harness) => void;
}[] = [
  {
    name: "basic text",
    scenario: "text",
    body: (model) => ({ model, input: "Say hello in one word." }),
    check: (r) => assert.match(outputText(r), /Say hello/),
  },
  {
    name: "system prompt",
    scenario: "text",
    body: (model) => ({
      model,
      instructions: "You are a pirate.",
      input: "Greet me.",
      temperature: 0.2,
      max_output_tokens: 64,
    }),
    check: (r, h) => {
      assert.equal(r.instructions, "You are a pirate.");
      assert.equal(r.temperature, 0.2);
      assert.equal(r.max_output_tokens, 64);
      assert.match(h.upstream.requests.at(-1)!.body, /You are a pirate/);
    },
  },
  {
    name: "tool calling",
    scenario: "tool",
    body: (model) => ({
      model,
      input: "What is the weather in Paris?",
      tools: [WEATHER_TOOL],
      tool_choice: { type: "function", name: "get_weather" },
    }),
    check: (r) => {
      const tools = r.tools as Json[];
      assert.deepEqual(tools, [{ ...WEATHER_TOOL, strict: true }]);
      assert.deepEqual(r.tool_choice, { type: "function", name: "get_weather" });
      const call = (r.output as Json[]).find((i) => i.type === "function_call");
      assert.equal(call?.name, "get_weather");
    },
  },
  {
    name: "image input",
    scenario: "text",
    body: (model) => ({
      model,
      input: [{
        role: "user",
        content: [
          { type: "input_text", text: "What is in this image?" },
          { type: "input_image", image_url: `data:image/png;base64,${PNG}` },
        ],
      }],
    }),
    check: (r, h) => {
      assert.match(outputText(r), /What is in this image/);
      assert.ok(h.upstream.requests.at(-1)!.body.includes(PNG.slice(0, 40)), "image sent upstream");
    },
  },
  {
    name: "file input",
    scenario: "text",
    body: (model) => ({
      model,
      input: [{
        role: "user",
        content: [
          { type: "input_text", text: "Summarize this file." },
          {
            type: "input_file",
            filename: "doc.pdf",
            file_data: `data:application/pdf;base64,${PDF}`,
          },
        ],
      }],
    }),
    check: (r, h) => {
      assert.match(outputText(r), /Summarize this file/);
      assert.ok(h.upstream.requests.at(-1)!.body.includes(PDF.slice(0, 20)), "file sent upstream");
    },
  },
  {
    name: "multi-turn",
    scenario: "text",
    body: (model) => ({
      model,
      input: [
        { role: "user", content: "My name is Ada." },
        { role: "assistant", content: "Nice to meet you, Ada." },
        { role: "user", content: "What is my name?" },
      ],
    }),
    check: (r, h) => {
      assert.match(outputText(r), /What is my name/);
      assert.match(h.upstream.requests.at(-1)!.body, /Nice to meet you, Ada/);
    },
  },
  {
    name: "function-call round trip",
    scenario: "tool",
    body: (model) => ({
      model,
      tools: [WEATHER_TOOL],
      input: [
        { role: "user", content: "Weather in Paris?" },
        {
          type: "function_call",
          call_id: "call_1",
          name: "get_weather",
          arguments: '{"city":"Paris"}',
        },
        { type: "function_call_output", call_id: "call_1", output: "sunny, 21 C" },
      ],
    }),
    check: (r) => assert.match(outputText(r), /Tool said: sunny, 21 C/),
  },
  {
    name: "reasoning",
    scenario: "think",
    body: (model) => ({
      model,
      input: "Think, then answer.",
      reasoning: { effort: "low", summary: "auto" },
    }),
    check: (r) => {
      assert.deepEqual(r.reasoning, { effort: "low", summary: "auto" });
      assert.ok((r.output as Json[]).some((i) => i.type === "reasoning"), "a reasoning item");
    },
  },
];

function outputText(r: Json): string {
  return (r.output as Json[]).filter((i) => i.type === "message")
    .flatMap((m) => m.content as Json[]).map((c) => c.text).join("");
}

/** The terminal event's response, validated like a JSON answer. */
function finalOf(events: Json[], label: string): Json {
  const types = events.map((e) => e.type);
  assert.deepEqual(types.slice(0, 2), ["response.created", "response.in_progress"], label);
  assert.equal(types.at(-1), "response.completed", label);
  events.forEach((e, i) => assert.equal(e.sequence_number, i, `${label}: sequence_number`));
  const final = events.at(-1)!.response as Json;
  assert.equal(final.status, "completed");
  assert.equal(typeof final.completed_at, "number");
  assert.equal((events[0].response as Json).completed_at, null);
  return final;
}

Deno.test("Open Responses compliance: the validators reject what issue 15 found", () => {
  assert.ok(EVENT_SCHEMAS.size >= 20, "the spec's streaming event schemas");
  const old = {
    id: "resp_1",
    object: "response",
    created_at: 1,
    status: "completed",
    error: null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    model: "m",
    output: [],
    parallel_tool_calls: true,
    temperature: null,
    tool_choice: "auto",
    tools: [],
    top_p: null,
    usage: null,
  };
  assert.equal(responseResource(old), false);
  const missing = new Set(responseResource.errors!.map((e) => e.params?.missingProperty));
  for (const f of ["completed_at", "truncation", "store", "prompt_cache_key"]) {
    assert.ok(missing.has(f), f);
  }
  const delta = EVENT_SCHEMAS.get("response.output_text.delta")!;
  assert.equal(delta({ type: "response.output_text.delta", sequence_number: 0 }), false);
});

Deno.test("Open Responses compliance: every converted family, JSON and stream", async (t) => {
  const h = await startHarness();
  const url = `${h.url}/v1/responses`;
  try {
    for (const [family, prefix] of Object.entries(FAMILIES)) {
      for (const c of CASES) {
        const model = `${prefix}-${c.scenario}`;
        await t.step(`${family}: ${c.name} (JSON)`, async () => {
          const label = `${family} ${c.name}`;
          const r = await jsonResponse(await post(url, openaiHeaders(), c.body(model)), label);
          assert.equal(r.status, "completed");
          assert.equal(typeof r.completed_at, "number");
          assert.equal(r.model, model);
          assert.equal(r.store, true);
          c.check?.(r, h);
        });
        await t.step(`${family}: ${c.name} (stream)`, async () => {
          const label = `${family} ${c.name} stream`;
          const res = await post(url, openaiHeaders(), { ...c.body(model), stream: true });
          const final = finalOf(await streamEvents(res, label), label);
          c.check?.(final, h);
        });
      }
      await t.step(`${family}: previous_response_id (JSON and stream)`, async () => {
        const model = `${prefix}-text`;
        const first = await jsonResponse(
          await post(url, openaiHeaders(), { model, input: "My favourite colour is teal." }),
          `${family} first`,
        );
        const second = await jsonResponse(
          await post(url, openaiHeaders(), {
            model,
            input: "What is my favourite colour?",
            previous_response_id: first.id,
          }),
          `${family} chained`,
        );
        assert.equal(second.previous_response_id, first.id);
        const sent = h.upstream.requests.at(-1)!.body;
        assert.match(sent, /My favourite colour is teal/, "the first turn went upstream");
        assert.match(sent, /Hello from [\w-]+ mock: My favourite colour is teal/, "and its answer");
        const res = await post(url, openaiHeaders(), {
          model,
          input: "And once more?",
          previous_response_id: second.id,
          stream: true,
        });
        const final = finalOf(await streamEvents(res, `${family} chained stream`), family);
        assert.equal(final.previous_response_id, second.id);
        assert.match(h.upstream.requests.at(-1)!.body, /What is my favourite colour/);
      });
    }
    await t.step("the OpenAI SDK's key header is the only credential sent", () => {
      assert.ok(!JSON.stringify(h.logs).includes(KEY));
    });
  } finally {
    await h.close();
  }
});

Deno.test("Open Responses compliance: every request setting is echoed, JSON and stream", async () => {
  const h = await startHarness();
  const settings = {
    instructions: "Be brief.",
    temperature: 0.3,
    top_p: 0.9,
    presence_penalty: 0.5,
    frequency_penalty: 0.25,
    top_logprobs: 2,
    max_output_tokens: 300,
    max_tool_calls: 3,
    truncation: "auto",
    parallel_tool_calls: false,
    tool_choice: "required",
    tools: [{ ...WEATHER_TOOL, strict: false }],
    text: { format: { type: "text" }, verbosity: "low" },
    reasoning: { effort: "high", summary: "detailed" },
    store: true,
    metadata: { team: "a" },
    safety_identifier: "user-42",
    prompt_cache_key: "cache-1",
  };
  try {
    for (const model of ["chat-tool", "msg-tool", "gem-tool", "resp-tool"]) {
      const body = { model, input: "Weather?", ...settings };
      const r = await jsonResponse(
        await post(`${h.url}/v1/responses`, openaiHeaders(), body),
        model,
      );
      const events = await streamEvents(
        await post(`${h.url}/v1/responses`, openaiHeaders(), { ...body, stream: true }),
        model,
      );
      for (
        const response of [
          r,
          ...events.filter((e) => e.response).map((e) => e.response as Json),
        ]
      ) {
        for (const [k, v] of Object.entries(settings)) {
          assert.deepEqual(response[k], v, `${model} ${k}`);
        }
        assert.equal(response.background, false);
        assert.equal(response.service_tier, "default");
      }
    }
    const schemaFormat = {
      type: "json_schema",
      name: "answer",
      schema: { type: "object", properties: { a: { type: "string" } } },
    };
    const r = await (await post(`${h.url}/v1/responses`, openaiHeaders(), {
      model: "msg-text",
      input: "JSON please",
      text: { format: schemaFormat },
    })).json();
    assert.deepEqual(r.text, {
      format: { ...schemaFormat, description: null, strict: false },
      verbosity: "medium",
    });
  } finally {
    await h.close();
  }
});

Deno.test("Open Responses compliance: POST /responses/compact on every converted family, a CompactResource replayed as input", async (t) => {
  const h = await startHarness();
  const compactResource = schema("CompactResource");
  assert.equal(compactResource({ id: "r", object: "response", created_at: 1, output: [] }), false);
  try {
    for (const [family, prefix] of Object.entries(FAMILIES)) {
      await t.step(family, async () => {
        const model = `${prefix}-text`;
        const history = [
          { type: "message", role: "user", content: "Build a landing page for a dog cafe." },
          { type: "message", role: "assistant", content: "Done: index.html." },
          { type: "message", role: "user", content: [{ type: "input_text", text: "Add a map." }] },
        ];
        const res = await post(`${h.url}/v1/responses/compact`, openaiHeaders(), {
          model,
          input: history,
          instructions: "You are a web developer.",
        });
        const compacted = await res.json();
        assert.equal(res.status, 200, JSON.stringify(compacted));
        assertValid(compactResource, compacted, `${family} compact`);
        const output = compacted.output as Json[];
        assert.deepEqual(output.map((i) => [i.type, i.role]), [
          ["message", "user"],
          ["message", "user"],
          ["compaction", undefined],
        ]);
        // The model was asked for the summary, with the whole history.
        const asked = h.upstream.requests.at(-1)!.body;
        assert.match(asked, /Write a concise summary of the conversation so far/);
        assert.match(asked, /Done: index\.html/);
        // Replayed as input (as Codex does), the item becomes the model's summary again.
        const replay = await jsonResponse(
          await post(`${h.url}/v1/responses`, openaiHeaders(), {
            model,
            input: [...output, { type: "message", role: "user", content: "Go on." }],
          }),
          `${family} replay`,
        );
        assert.equal(replay.status, "completed");
        const sent = h.upstream.requests.at(-1)!.body;
        assert.match(sent, /Summary of the earlier conversation/);
        assert.match(sent, /Hello from [\w-]+ mock/, "the summary the model wrote");
      });
    }
    await t.step("not billed", () => {
      const compacts = h.logs.filter((l) => l.endpoint === "responses_compact");
      assert.equal(compacts.length, Object.keys(FAMILIES).length);
      for (const l of compacts) assert.equal(l.billable, false, JSON.stringify(l));
    });
  } finally {
    await h.close();
  }
});
