/**
 * Hosted web search across families, end to end: the published SDKs send each vendor's own
 * search tool through the gateway to a mock provider of another family, which runs its own
 * hosted search (tests/mock: byte-faithful Anthropic server-tool blocks, Responses
 * web_search_call items, Gemini groundingMetadata), and must get the results back in their own
 * shapes. Then the policy: chat providers have no hosted search (drop and report, or 400 when
 * nothing else is left), Gemini takes no built-in tools next to functions, and the route option
 * `hosted_tools` (map | drop | reject).
 */
import assert from "node:assert/strict";
import { Anthropic, GoogleGenAI, OpenAI } from "./sdk/deps.ts";
import {
  anthropicHeaders,
  googleHeaders,
  type Harness,
  KEY,
  openaiHeaders,
  post,
  startHarness,
} from "./helpers.ts";
import { groundingWeb } from "./mock/generate-content.ts";
import { SEARCH_CITED, SEARCH_RESULTS } from "./mock/scenario.ts";

type WebSearchCall = OpenAI.Responses.ResponseFunctionWebSearch;

const QUERY = "deno 3 release date";
const ANSWER = `Results for "${QUERY}": ${SEARCH_CITED}.`;

/** Route prefixes of the providers that have a hosted search (tests/helpers.ts mockConfig). */
const TARGETS = { responses: "resp", messages: "msg", gemini: "gem" } as const;
type Target = keyof typeof TARGETS;

/** The sources a client must get back, as each provider's search names them. */
function sources(target: Target): { url: string; title: string }[] {
  return SEARCH_RESULTS.map((r, i) => {
    if (target === "gemini") {
      const web = groundingWeb(i, r.url);
      return { url: web.uri, title: web.title };
    }
    // Responses sources carry no title: the URL stands in for it.
    return { url: r.url, title: target === "messages" ? r.title : r.url };
  });
}

/** The URL the answer's citation points at. */
function citedUrl(target: Target): string {
  const url = SEARCH_RESULTS[0].url;
  if (target === "gemini") return groundingWeb(0, url).uri;
  return target === "responses" ? `${url}?utm_source=openai` : url;
}

/** The hosted tool the provider was sent, in its own form. */
function upstreamSearchTool(h: Harness, target: Target): unknown {
  const body = JSON.parse(h.upstream.requests.at(-1)!.body);
  if (target === "gemini") return body.tools;
  return body.tools.map((t: { type: string; name?: string }) => t.type);
}

const UPSTREAM_TOOL: Record<Target, unknown> = {
  responses: ["web_search"],
  messages: ["web_search_20250305"],
  gemini: [{ googleSearch: {} }],
};

const others = (client: Target) => (Object.keys(TARGETS) as Target[]).filter((t) => t !== client);

// ---- Claude Code's WebSearch: Anthropic web_search_20250305, forced by tool_choice ----

Deno.test("hosted search: Anthropic SDK web_search on Responses and Gemini providers", async (t) => {
  const h = await startHarness();
  const client = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
  const params = (model: string): Anthropic.MessageCreateParamsNonStreaming => ({
    model,
    max_tokens: 1024,
    messages: [{ role: "user", content: QUERY }],
    tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 8 }],
    tool_choice: { type: "tool", name: "web_search" },
  });
  try {
    for (const target of others("messages")) {
      for (const stream of [false, true]) {
        await t.step(`${target}, ${stream ? "stream" : "JSON"}`, async () => {
          const model = `${TARGETS[target]}-text`;
          const message = stream
            ? await client.messages.stream(params(model)).finalMessage()
            : await client.messages.create(params(model));
          assert.deepEqual(upstreamSearchTool(h, target), UPSTREAM_TOOL[target]);
          const use = message.content.find((b) => b.type === "server_tool_use");
          const result = message.content.find((b) => b.type === "web_search_tool_result");
          assert.ok(use && result, "a server_tool_use and its web_search_tool_result");
          assert.equal(use.name, "web_search");
          assert.deepEqual(use.input, { query: QUERY });
          assert.equal(result.tool_use_id, use.id);
          assert.ok(Array.isArray(result.content));
          assert.deepEqual(
            result.content.map((r) => ({ url: r.url, title: r.title })),
            sources(target),
          );
          const texts = message.content.filter((b) => b.type === "text");
          assert.equal(texts.map((b) => b.text).join(""), ANSWER);
          const citation = texts.flatMap((b) => b.citations ?? [])[0];
          assert.equal(citation?.type, "web_search_result_location");
          assert.equal(
            citation.type === "web_search_result_location" && citation.url,
            citedUrl(target),
          );
          assert.deepEqual(message.usage.server_tool_use, {
            web_search_requests: 1,
            web_fetch_requests: 0,
          });
        });
      }
    }
  } finally {
    await h.close();
  }
});

// ---- Codex / openai SDK: Responses web_search ----

Deno.test("hosted search: openai SDK web_search on Anthropic and Gemini providers", async (t) => {
  const h = await startHarness();
  const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
  try {
    for (const target of others("responses")) {
      for (const stream of [false, true]) {
        await t.step(`${target}, ${stream ? "stream" : "JSON"}`, async () => {
          const params = {
            model: `${TARGETS[target]}-text`,
            input: QUERY,
            tools: [{ type: "web_search" as const }],
          };
          const response = stream
            ? await client.responses.stream(params).finalResponse()
            : await client.responses.create(params);
          assert.deepEqual(upstreamSearchTool(h, target), UPSTREAM_TOOL[target]);
          const call = response.output.find((o) => o.type === "web_search_call") as
            | WebSearchCall
            | undefined;
          assert.ok(call, "a web_search_call item");
          assert.equal(call.status, "completed");
          assert.equal(call.action.type, "search");
          assert.ok(call.action.type === "search");
          assert.equal(call.action.query, QUERY);
          assert.deepEqual(
            call.action.sources?.map((s) => s.url),
            sources(target).map((s) => s.url),
          );
          assert.equal(response.output_text, ANSWER);
          const text = response.output.flatMap((o) => o.type === "message" ? o.content : [])
            .find((c) => c.type === "output_text");
          assert.ok(text?.type === "output_text");
          const [note] = text.annotations;
          assert.ok(note?.type === "url_citation", "a url_citation annotation");
          assert.equal(text.text.slice(note.start_index, note.end_index), SEARCH_CITED);
          assert.equal(note.url, citedUrl(target));
        });
      }
    }
  } finally {
    await h.close();
  }
});

// ---- chat clients: web_search_options ----

Deno.test("hosted search: openai SDK chat web_search_options on the three other families", async (t) => {
  const h = await startHarness();
  const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
  try {
    for (const target of Object.keys(TARGETS) as Target[]) {
      for (const stream of [false, true]) {
        await t.step(`${target}, ${stream ? "stream" : "JSON"}`, async () => {
          const params = {
            model: `${TARGETS[target]}-text`,
            messages: [{ role: "user" as const, content: QUERY }],
            web_search_options: {},
          };
          let content = "";
          let annotations: OpenAI.Chat.Completions.ChatCompletionMessage.Annotation[] = [];
          if (stream) {
            // The stream helper does not collect annotations: read the raw chunks.
            for await (const chunk of await client.chat.completions.create({ ...params, stream })) {
              const delta = chunk.choices[0]?.delta as { content?: string; annotations?: [] };
              content += delta?.content ?? "";
              annotations = delta?.annotations ?? annotations;
            }
          } else {
            const message = (await client.chat.completions.create(params)).choices[0].message;
            content = message.content ?? "";
            annotations = message.annotations ?? [];
          }
          assert.deepEqual(upstreamSearchTool(h, target), UPSTREAM_TOOL[target]);
          assert.equal(content, ANSWER);
          const [note] = annotations;
          assert.equal(note?.type, "url_citation");
          const { start_index, end_index, url } = note.url_citation;
          assert.equal(content.slice(start_index, end_index), SEARCH_CITED);
          assert.equal(url, citedUrl(target));
        });
      }
    }
  } finally {
    await h.close();
  }
});

// ---- Gemini CLI's google_web_search: googleSearch ----

Deno.test("hosted search: @google/genai googleSearch on Anthropic and Responses providers", async (t) => {
  const h = await startHarness();
  const ai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
  try {
    for (const target of others("gemini")) {
      for (const stream of [false, true]) {
        await t.step(`${target}, ${stream ? "stream" : "JSON"}`, async () => {
          const params = {
            model: `${TARGETS[target]}-text`,
            contents: QUERY,
            config: { tools: [{ googleSearch: {} }] },
          };
          let text = "";
          let candidate;
          if (stream) {
            for await (const chunk of await ai.models.generateContentStream(params)) {
              text += chunk.text ?? "";
              candidate = chunk.candidates?.[0];
            }
          } else {
            const res = await ai.models.generateContent(params);
            text = res.text ?? "";
            candidate = res.candidates?.[0];
          }
          assert.deepEqual(upstreamSearchTool(h, target), UPSTREAM_TOOL[target]);
          assert.equal(text, ANSWER);
          const g = candidate?.groundingMetadata;
          assert.ok(g, "groundingMetadata on the last candidate");
          assert.deepEqual(g.webSearchQueries, [QUERY]);
          assert.deepEqual(
            g.groundingChunks?.map((c) => ({ url: c.web?.uri, title: c.web?.title })),
            sources(target),
          );
          const [support] = g.groundingSupports ?? [];
          const bytes = new TextEncoder().encode(text);
          const { startIndex = 0, endIndex = 0 } = support?.segment ?? {};
          // Gemini offsets are UTF-8 bytes into the answer (Gemini CLI inserts [n] there).
          assert.equal(new TextDecoder().decode(bytes.slice(startIndex, endIndex)), SEARCH_CITED);
          // The citation points at its source (OpenAI's tracking parameters left aside).
          const chunk = g.groundingChunks?.[support.groundingChunkIndices?.[0] ?? -1];
          assert.equal(chunk?.web?.uri, sources(target)[0].url);
        });
      }
    }
  } finally {
    await h.close();
  }
});

// ---- no hosted search on the target ----

/** Each client's request with only its hosted search tool, and its error envelope's message. */
const HOSTED_ONLY = [
  {
    name: "responses",
    path: (_model: string) => "/v1/responses",
    headers: openaiHeaders(),
    body: (model: string, tools: unknown[] = []) => ({
      model,
      input: QUERY,
      tools: [...tools, { type: "web_search" }],
    }),
    fn: { type: "function", name: "exec_command", parameters: { type: "object" } },
    tool: "web_search",
    message: (b: { error: { message: string } }) => b.error.message,
  },
  {
    name: "messages",
    path: (_model: string) => "/v1/messages",
    headers: anthropicHeaders(),
    body: (model: string, tools: unknown[] = []) => ({
      model,
      max_tokens: 100,
      messages: [{ role: "user", content: QUERY }],
      tools: [...tools, { type: "web_search_20250305", name: "web_search", max_uses: 8 }],
    }),
    fn: { name: "Bash", input_schema: { type: "object" } },
    tool: "web_search",
    message: (b: { error: { message: string } }) => b.error.message,
  },
  {
    name: "gemini",
    path: (model: string) => `/v1beta/models/${model}:generateContent`,
    headers: googleHeaders(),
    body: (_model: string, tools: unknown[] = []) => ({
      contents: [{ role: "user", parts: [{ text: QUERY }] }],
      tools: [...tools, { googleSearch: {} }],
    }),
    fn: { functionDeclarations: [{ name: "ls", parametersJsonSchema: { type: "object" } }] },
    tool: "googleSearch",
    message: (b: { error: { message: string } }) => b.error.message,
  },
];

Deno.test("hosted search on a chat provider: 400 when alone, dropped and reported when mixed", async (t) => {
  const h = await startHarness();
  try {
    for (const c of HOSTED_ONLY) {
      await t.step(`${c.name}: only the hosted tool`, async () => {
        const before = h.upstream.requests.length;
        const res = await post(h.url + c.path("chat-text"), c.headers, c.body("chat-text"));
        assert.equal(res.status, 400);
        const message = c.message(await res.json());
        assert.match(message, new RegExp(`hosted tool "${c.tool}" \\(hosted web search\\)`));
        assert.match(message, /route "chat-\*" → oai-chat \(chat\)/);
        assert.match(message, /the upstream has no equivalent, and the request has no other tools/);
        assert.equal(h.upstream.requests.length, before, "nothing reached the provider");
      });
      await t.step(`${c.name}: next to a function tool`, async () => {
        const res = await post(
          h.url + c.path("chat-text"),
          c.headers,
          c.body("chat-text", [c.fn]),
        );
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("x-gateway-dropped-params"), `tools.${c.tool}`);
        await res.body?.cancel();
        const sent = JSON.parse(h.upstream.requests.at(-1)!.body);
        assert.equal(sent.tools.length, 1, "only the function tool went upstream");
        assert.equal(sent.tools[0].type, "function");
        const log = h.logs.findLast((l) => l.model === "chat-text");
        assert.deepEqual(log?.dropped, [`tools.${c.tool}`], "the access log names the drop");
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("hosted search next to functions: kept by Anthropic and Responses, dropped for Gemini", async () => {
  const h = await startHarness();
  try {
    const codex = HOSTED_ONLY[0];
    const fn = [codex.fn];
    const msg = await post(h.url + codex.path(""), codex.headers, codex.body("msg-text", fn));
    assert.equal(msg.status, 200);
    assert.equal(msg.headers.get("x-gateway-dropped-params"), null);
    await msg.body?.cancel();
    const toAnthropic = JSON.parse(h.upstream.requests.at(-1)!.body);
    assert.deepEqual(toAnthropic.tools.map((t: { name: string }) => t.name), [
      "exec_command",
      "web_search",
    ]);

    const gem = await post(h.url + codex.path(""), codex.headers, codex.body("gem-text", fn));
    assert.equal(gem.status, 200);
    assert.equal(gem.headers.get("x-gateway-dropped-params"), "tools.web_search");
    await gem.body?.cancel();
    const toGemini = JSON.parse(h.upstream.requests.at(-1)!.body);
    assert.deepEqual(toGemini.tools.map((t: object) => Object.keys(t)), [["functionDeclarations"]]);

    const gemini = HOSTED_ONLY[2];
    const res = await post(
      h.url + gemini.path("resp-text"),
      gemini.headers,
      gemini.body("resp-text", [gemini.fn]),
    );
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const toResponses = JSON.parse(h.upstream.requests.at(-1)!.body);
    assert.deepEqual(toResponses.tools.map((t: { type: string }) => t.type), [
      "function",
      "web_search",
    ]);
    assert.deepEqual(toResponses.include, ["web_search_call.action.sources"]);
  } finally {
    await h.close();
  }
});

Deno.test("route option hosted_tools: reject refuses, drop drops even what maps", async () => {
  const h = await startHarness({
    extraRoutes: [
      { models: ["strict-*"], provider: "anthropic", passthrough: false, hosted_tools: "reject" },
      { models: ["nosearch-*"], provider: "anthropic", passthrough: false, hosted_tools: "drop" },
    ],
  });
  try {
    const codex = HOSTED_ONLY[0];
    const strict = await post(h.url + codex.path(""), codex.headers, codex.body("strict-text"));
    assert.equal(strict.status, 400);
    assert.match(
      codex.message(await strict.json()),
      /^tools\[0\]: hosted tool "web_search" \(hosted web search\) is not converted on route "strict-\*" → anthropic \(messages\) \(its hosted_tools setting is reject\)$/,
    );

    const mixed = await post(
      h.url + codex.path(""),
      codex.headers,
      codex.body("nosearch-text", [codex.fn]),
    );
    assert.equal(mixed.status, 200);
    assert.equal(mixed.headers.get("x-gateway-dropped-params"), "tools.web_search");
    await mixed.body?.cancel();
    const sent = JSON.parse(h.upstream.requests.at(-1)!.body);
    assert.deepEqual(sent.tools.map((t: { name: string }) => t.name), ["exec_command"]);

    const alone = await post(h.url + codex.path(""), codex.headers, codex.body("nosearch-text"));
    assert.equal(alone.status, 400);
    assert.match(codex.message(await alone.json()), /hosted tools are dropped on this route/);
  } finally {
    await h.close();
  }
});
