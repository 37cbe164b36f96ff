/**
 * Deno's built-in OpenTelemetry on a running gateway (`OTEL_DENO=true`, OTLP over HTTP/JSON
 * to a receiver in this test): request spans carry the GenAI attributes, and the query string
 * (a `?key=`, accepted or rejected, or any other name) is dropped from `url.full` and `url.query`.
 */
import assert from "node:assert/strict";
import {
  anthropicHeaders,
  bodies,
  googleHeaders,
  KEY,
  mockConfig,
  openaiHeaders,
  post,
} from "./helpers.ts";
import { startMockUpstream, TOKENS } from "./mock/upstream.ts";
import { startGateway } from "./process.ts";

type Attrs = Map<string, unknown[]>;

/** Collects exported server spans (kind 2) as attribute name → every value it was given. */
function receiver() {
  const spans: Attrs[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.json();
    if (new URL(req.url).pathname === "/v1/traces") {
      for (const rs of body.resourceSpans ?? []) {
        for (const ss of rs.scopeSpans ?? []) {
          for (const span of ss.spans ?? []) {
            if (span.kind !== 2) continue;
            const attrs: Attrs = new Map();
            for (const a of span.attributes) {
              const value = Object.values(a.value)[0];
              attrs.set(a.key, [...(attrs.get(a.key) ?? []), value]);
            }
            spans.push(attrs);
          }
        }
      }
    }
    return Response.json({});
  });
  return { spans, url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

/**
 * The value an attribute ended with. Deno 2.9.6 exports both values of an attribute set twice
 * (the URL with the key too, before the overwrite): docs/metrics.md says how to drop them.
 */
const last = (span: Attrs, key: string) => span.get(key)?.at(-1);

Deno.test("otel: request spans carry GenAI attributes, never a query string in their URL", async () => {
  const upstream = await startMockUpstream();
  const otlp = receiver();
  const dir = await Deno.makeTempDir({ prefix: "gateway-otel-" });
  try {
    const gateway = await startGateway(await mockConfig(upstream.url), dir, {
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: "llm-gateway",
    });
    try {
      // An agent session (Codex's header) becomes the span's conversation id.
      const chat = await post(
        `${gateway.url}/v1/chat/completions`,
        { ...openaiHeaders(), session_id: "sess-otel" },
        { ...bodies.chat("msg-text") },
      );
      assert.equal(chat.status, 200);
      await chat.body?.cancel();
      const stream = await post(
        `${gateway.url}/v1/messages`,
        anthropicHeaders(),
        bodies.messages("chat-text", true),
      );
      assert.equal(stream.status, 200);
      await stream.text();
      const generate = `${gateway.url}/v1beta/models/gem-text:generateContent`;
      // A credential under another name is no key to the gateway, but no span may hold it either.
      const ok = await post(
        `${generate}?api_key=sk-in-query&token=tok-in-query`,
        googleHeaders(),
        bodies.gemini(),
      );
      assert.equal(ok.status, 200);
      await ok.body?.cancel();
      // A key in the URL is refused (a 400), a valid one as much as a wrong one.
      for (const key of [KEY, "sk-wrong-key-in-url"]) {
        const res = await post(
          `${generate}?key=${key}`,
          { "content-type": "application/json" },
          bodies.gemini(),
        );
        assert.equal(res.status, 400);
        await res.body?.cancel();
      }
    } finally {
      // Deno exports what is left when the process exits.
      await gateway.stop();
    }
    const byPath = (path: string) => otlp.spans.filter((s) => last(s, "url.path") === path);
    const [chat] = byPath("/v1/chat/completions");
    assert.ok(chat, `no span for the chat request among ${otlp.spans.length}`);
    assert.equal(last(chat, "gen_ai.operation.name"), "chat");
    assert.equal(last(chat, "gen_ai.provider.name"), "anthropic");
    assert.equal(last(chat, "gen_ai.request.model"), "msg-text");
    assert.equal(Number(last(chat, "gen_ai.usage.input_tokens")), TOKENS.input);
    assert.equal(Number(last(chat, "gen_ai.usage.output_tokens")), TOKENS.text);
    assert.equal(last(chat, "gateway.key"), "team-a");
    assert.equal(last(chat, "gen_ai.conversation.id"), "sess-otel");

    // A stream's span has its route; Deno ends it before the stream's usage comes.
    const [stream] = byPath("/v1/messages");
    assert.deepEqual(
      ["gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model"].map((k) =>
        last(stream, k)
      ),
      ["chat", "openai", "chat-text"],
    );
    const gemini = byPath("/v1beta/models/gem-text:generateContent");
    assert.equal(gemini.length, 3);
    const refused = gemini.filter((s) => last(s, "error.type") === "invalid_request");
    assert.equal(refused.length, 2);
    const answered = gemini.find((s) => !refused.includes(s))!;
    for (const span of gemini) {
      assert.equal(last(span, "url.query"), "");
      assert.equal(last(span, "url.full"), `${gateway.url}/v1beta/models/gem-text:generateContent`);
    }
    assert.equal(last(answered, "gen_ai.provider.name"), "gcp.gemini");
    assert.equal(last(answered, "gen_ai.operation.name"), "generate_content");
  } finally {
    await otlp.close();
    await upstream.close();
    await Deno.remove(dir, { recursive: true });
  }
});
