/**
 * "A new wire format is one plugin folder, with no edit under src/": a toy sixth client format
 * (tests/toy_format/) served next to the five real ones, over real HTTP on loopback. The toy
 * provider checks HMAC signatures and streams NDJSON; the other formats' providers are the
 * mock upstream.
 */
import assert from "node:assert/strict";
import { checkFormats, type Config, ConfigError, validateConfig } from "../src/config/config.ts";
import { Formats } from "../src/request/formats.ts";
import { setAccessLogSink } from "../src/ops/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import { PLUGINS } from "../plugins/mod.ts";
import { FORMATS, KEY, mockConfig, openaiHeaders, post } from "./helpers.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { toyPlugin } from "./toy_format/plugin.ts";
import { startToyUpstream, TOY_OUTPUT, TOY_TOKENS } from "./toy_format/upstream_server.ts";

/** The toy provider's own key: a signature key, never to be sent. */
const TOY_KEY = "toy-provider-secret-0123";

type Obj = Record<string, unknown>;

/** The mock upstream's config plus a toy provider serving `toy-*` (scenario words as there). */
async function toyConfig(mockUrl: string, toyUrl: string): Promise<Config> {
  const base = await mockConfig(mockUrl);
  const toyProvider = { name: "toy", api: "toy", base_url: toyUrl, api_key: TOY_KEY };
  return validateConfig({
    ...base,
    providers: [...base.providers, toyProvider],
    routes: [{ models: ["toy-*"], provider: "toy" }, ...base.routes],
  });
}

const ndjsonLines = (text: string): Obj[] =>
  text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));

/** The `data:` payloads of an SSE body, in order. */
const sseData = (text: string): string[] =>
  text.split("\n\n").filter((r) => r.startsWith("data: ")).map((r) => r.slice(6));

Deno.test("toy format: a fifth wire format as one plugin folder", async (t) => {
  const logs: Obj[] = [];
  const previousSink = setAccessLogSink((line) => logs.push(JSON.parse(line)));
  const mock = await startMockUpstream();
  const toy = startToyUpstream(TOY_KEY);
  const config = await toyConfig(mock.url, toy.url);
  const gw = await createGateway(config, [...PLUGINS, toyPlugin]);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, createHandler(gw));
  const url = `http://127.0.0.1:${server.addr.port}`;

  const toyHeaders = { "x-toy-key": KEY, "content-type": "application/json" };
  const toyPost = (body: unknown, headers: Record<string, string> = toyHeaders) =>
    post(url + "/toy/v1/generate", headers, body);
  const chatPost = (body: unknown) => post(url + "/v1/chat/completions", openaiHeaders(), body);
  const chatBody = (model: string, stream = false) => ({
    model,
    stream,
    messages: [{ role: "user", content: "hi there" }],
    ...(stream && { stream_options: { include_usage: true } }),
  });
  const accessLine = (res: Response) =>
    logs.find((l) => l.request_id === res.headers.get("x-gateway-request-id"));

  try {
    await t.step("toy client → toy provider: relayed as is, signed", async () => {
      const body = JSON.stringify({ model: "toy-text", prompt: "hi there" });
      const res = await toyPost(body);
      const text = await res.text();
      assert.equal(res.status, 200, text);
      assert.equal(res.headers.get("x-gateway-provider"), "toy");
      assert.equal(text, toy.sent.at(-1), "the provider's bytes, untouched");
      assert.equal(toy.verified.at(-1), body, "the client's body, signed and untouched");
      assert.deepEqual(JSON.parse(text).tokens, TOY_TOKENS);

      const streamBody = JSON.stringify({ model: "toy-text", prompt: "hi there", stream: true });
      const s = await toyPost(streamBody);
      const streamed = await s.text();
      assert.equal(s.status, 200, streamed);
      assert.match(s.headers.get("content-type")!, /^application\/x-ndjson/);
      assert.equal(streamed, toy.sent.at(-1), "NDJSON relayed byte for byte");
      assert.equal(toy.verified.at(-1), streamBody);
      const lines = ndjsonLines(streamed);
      assert.deepEqual(lines.slice(0, -1).map((l) => l.delta), TOY_OUTPUT);
      assert.deepEqual(lines.at(-1), { done: true, stop: "done", tokens: TOY_TOKENS });
      // The watch read the usage from the done line.
      const log = accessLine(s);
      assert.equal(log?.input_tokens, TOY_TOKENS.in);
      assert.equal(log?.output_tokens, TOY_TOKENS.out);
      assert.equal(toy.rejected, 0);
      assert.equal(toy.keyLeaked, false, "the signing key never went over the wire");
    });

    await t.step("toy client ↔ the other formats' providers, converted", async () => {
      for (const model of ["chat-text", "msg-text"]) {
        const res = await toyPost({ model, prompt: "hi there" });
        const json = await res.json();
        assert.equal(res.status, 200, JSON.stringify(json));
        assert.equal(json.model, model);
        assert.equal(json.stop, "done");
        assert.ok(typeof json.output === "string" && json.output.length > 0);
        assert.ok(json.tokens.in > 0 && json.tokens.out > 0, JSON.stringify(json.tokens));
        const sent = mock.requests.at(-1)!;
        assert.match(sent.body, /hi there/, `${model}: the prompt reached the provider`);

        const s = await toyPost({ model, prompt: "hi there", stream: true });
        const streamed = await s.text();
        assert.equal(s.status, 200, streamed);
        assert.equal(s.headers.get("content-type"), "application/x-ndjson", model);
        const lines = ndjsonLines(streamed);
        assert.equal(lines.slice(0, -1).map((l) => l.delta).join(""), json.output, model);
        const done = lines.at(-1)!;
        assert.equal(done.done, true);
        assert.equal(done.stop, "done");
        assert.ok((done.tokens as { out: number }).out > 0, streamed);
      }

      // An OpenAI chat client in front of the toy provider.
      const res = await chatPost(chatBody("toy-text"));
      const json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(json));
      assert.equal(json.object, "chat.completion");
      assert.equal(json.choices[0].message.content, TOY_OUTPUT.join(""));
      assert.equal(json.usage.prompt_tokens, TOY_TOKENS.in);
      assert.deepEqual(JSON.parse(toy.verified.at(-1)!), { model: "toy-text", prompt: "hi there" });

      const s = await chatPost(chatBody("toy-text", true));
      const streamed = await s.text();
      assert.equal(s.status, 200, streamed);
      assert.match(s.headers.get("content-type")!, /^text\/event-stream/);
      const data = sseData(streamed);
      assert.equal(data.at(-1), "[DONE]");
      const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
      assert.ok(chunks.every((c) => c.object === "chat.completion.chunk"), streamed);
      const content = chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("");
      assert.equal(content, TOY_OUTPUT.join(""));
      assert.equal(chunks.at(-1).usage.completion_tokens, TOY_TOKENS.out);
      assert.equal(JSON.parse(toy.verified.at(-1)!).stream, true);
      assert.equal(toy.keyLeaked, false);
    });

    await t.step("errors in the toy dialect", async () => {
      const missing = await toyPost({ model: "toy-text", prompt: "hi" }, {
        "content-type": "application/json",
      });
      const noKey = (await missing.json()).fault;
      assert.equal(missing.status, 401);
      assert.equal(noKey.kind, "authentication");
      assert.equal(noKey.status, 401);
      assert.match(noKey.text, /x-toy-key/);

      for (
        const [body, field] of [[{ model: "toy-text", prompt: 42 }, "prompt"], [{
          prompt: "hi",
        }, "model"]] as const
      ) {
        const res = await toyPost(body);
        const fault = (await res.json()).fault;
        assert.equal(res.status, 400);
        assert.equal(fault.kind, "invalid_request");
        assert.match(fault.text, new RegExp(`^${field}:`));
      }

      const unknown = await post(url + "/toy/v1/nope", toyHeaders, {});
      const notFound = (await unknown.json()).fault;
      assert.equal(unknown.status, 404);
      assert.equal(notFound.kind, "not_found");

      // A busy toy provider: its fault says what its 500 does not.
      const busy = await chatPost(chatBody("toy-busy"));
      const error = (await busy.json()).error;
      assert.equal(busy.status, 500);
      assert.equal(error.type, "service_unavailable_error");
      assert.equal(error.message, "the toy is busy", "the toy's own error text");
      // Relayed to a toy client, the provider's own envelope stands.
      const relayed = await toyPost({ model: "toy-busy", prompt: "hi" });
      assert.equal(relayed.status, 500);
      assert.deepEqual((await relayed.json()).fault, { kind: "busy", text: "the toy is busy" });
    });

    await t.step("a stream cut short ends with the interruption", async () => {
      // Relayed: the half line the toy left behind never goes out.
      const relayed = await toyPost({ model: "toy-cut", prompt: "hi", stream: true });
      const lines = ndjsonLines(await relayed.text());
      assert.deepEqual(lines.slice(0, -1), [{ delta: TOY_OUTPUT[0] }, { delta: TOY_OUTPUT[1] }]);
      assert.equal((lines.at(-1)!.fault as Obj).kind, "upstream_interrupted");

      // Converted, for a toy client (the client framing's end) and a chat client.
      const converted = await toyPost({ model: "chat-cut", prompt: "hi", stream: true });
      const last = ndjsonLines(await converted.text()).at(-1)!;
      assert.equal((last.fault as Obj).kind, "upstream_interrupted");

      const chat = await chatPost(chatBody("toy-cut", true));
      const data = sseData(await chat.text());
      assert.equal(data.at(-1), "[DONE]");
      assert.equal(JSON.parse(data.at(-2)!).type, "upstream_interrupted");
    });

    await t.step(
      "a line that is not JSON ends the stream; the lines before it go out",
      async () => {
        const relayed = await toyPost({ model: "toy-garbled", prompt: "hi", stream: true });
        const text = await relayed.text();
        assert.ok(text.startsWith(`{"delta":"${TOY_OUTPUT[0]}"}\n`), text);
        assert.doesNotMatch(text, /proxy error/);
        const lines = ndjsonLines(text);
        assert.equal(lines.length, 2);
        assert.deepEqual(lines[1].fault, {
          kind: "upstream_interrupted",
          text: "the upstream sent a malformed event",
        });
      },
    );

    await t.step("a WebSocket of the toy's own wire: the core runs the session", async () => {
      const ws = new WebSocket(`${url.replace("http", "ws")}/toy/v1/socket`, {
        headers: { "x-toy-key": KEY },
      });
      const frames: Obj[] = [];
      let arrived = () => {};
      ws.onmessage = (e) => {
        frames.push(JSON.parse(e.data));
        arrived();
      };
      /** The frames up to the next done line or fault. */
      const answer = async () => {
        const start = frames.length;
        const ended = () => frames.slice(start).some((f) => f.done || f.fault);
        while (!ended()) await new Promise<void>((resolve) => arrived = resolve);
        return frames.slice(start);
      };
      const closed = new Promise((resolve) => ws.onclose = resolve);
      await new Promise((resolve) => ws.onopen = resolve);
      try {
        for (const model of ["toy-text", "chat-text"]) {
          ws.send(JSON.stringify({ model, prompt: "hi there" }));
          const lines = await answer();
          const done = lines.at(-1)!;
          assert.equal(done.done, true, JSON.stringify(lines));
          assert.ok(lines.slice(0, -1).every((l) => typeof l.delta === "string"), model);
          assert.ok((done.tokens as { out: number }).out > 0, model);
        }
        // A bad frame gets the toy's own error frame; the socket stays open.
        ws.send(new Uint8Array([1, 2]));
        const [bad] = await answer();
        assert.deepEqual(bad, {
          fault: { kind: "invalid_request", text: "send JSON text frames", status: 400 },
        });
        ws.send(JSON.stringify({ model: "toy-text" }));
        const [missing] = await answer();
        assert.equal((missing.fault as Obj).text, "prompt: required, expected a string");
        ws.send(JSON.stringify({ model: "toy-text", prompt: "again" }));
        assert.equal((await answer()).at(-1)!.done, true);
      } finally {
        ws.close();
        await closed;
      }
      // Each request frame is a request of its own: its own access-log line and usage (a frame
      // that is no request gets its error frame and no line).
      const own = logs.filter((l) => l.endpoint === "toy_socket" && l.status !== 101);
      assert.deepEqual(own.map((l) => l.status), [200, 200, 200]);
      assert.ok(own.every((l) => (l.output_tokens as number) > 0), JSON.stringify(own));
    });

    await t.step("config: api toy is accepted only with the toy plugin", async () => {
      checkFormats(config, new Formats([...PLUGINS, toyPlugin]));
      const i = config.providers.findIndex((p) => p.api === "toy");
      assert.throws(
        () => checkFormats(config, FORMATS),
        (e) => e instanceof ConfigError && e.message.includes(`providers[${i}].api`),
      );
      await assert.rejects(createGateway(config, PLUGINS), ConfigError);
    });
  } finally {
    await server.shutdown();
    await gw.store.close();
    await mock.close();
    await toy.close();
    setAccessLogSink(previousSink);
  }
});
