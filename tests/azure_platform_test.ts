/**
 * Azure OpenAI (plugins/platforms/azure.ts) through the gateway against the Azure mock
 * (tests/mock/azure.ts, which refuses anything but its `api-key` or an Entra token): chat and
 * Responses clients relayed (JSON and streams, the official OpenAI SDK), an Anthropic client
 * converted to Azure chat, the key only ever in `api-key`, an Entra token from a file (re-read on
 * reload), and whatever Azure echoes of either scrubbed.
 */
import assert from "node:assert/strict";
import { Reloader } from "../src/reload.ts";
import { AZURE_TEST_ENTRA_TOKEN, AZURE_TEST_KEY, startMockAzure } from "./mock/azure.ts";
import { Anthropic, OpenAI } from "./sdk/deps.ts";
import { KEY, lastResponseId, openaiHeaders, post, type WsEvent, wsExchange } from "./helpers.ts";
import { platformConfig, startPlatformGateway } from "./platform_harness.ts";

const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0 });

function azureConfig(base: string, tokenFile: string) {
  const azure = (name: string, api: string, extra: Record<string, unknown>) => ({
    name,
    api,
    platform: "azure-openai",
    base_url: `${base}/openai/v1`,
    ...extra,
  });
  return platformConfig({
    providers: [
      azure("az-chat", "chat", { api_key: AZURE_TEST_KEY }),
      azure("az-resp", "responses", { api_key: AZURE_TEST_KEY }),
      azure("az-entra", "chat", { azure: { bearer_token_file: tokenFile } }),
    ],
    routes: [
      { models: ["chat-*"], provider: "az-chat" },
      { models: ["resp-*"], provider: "az-resp", passthrough: true },
      { models: ["entra-*"], provider: "az-entra" },
    ],
  });
}

Deno.test("azure-openai: chat, responses and messages clients through an Azure resource", async (t) => {
  const azure = await startMockAzure();
  const tokenFile = await Deno.makeTempFile();
  await Deno.writeTextFile(tokenFile, `${AZURE_TEST_ENTRA_TOKEN}\n`);
  const h = await startPlatformGateway(azureConfig(azure.url, tokenFile));
  const last = () => azure.requests.at(-1)!;
  const openai = client(h.url);

  try {
    await t.step(
      "chat, JSON: relayed with the key in api-key, never as Authorization",
      async () => {
        const res = await openai.chat.completions.create({
          model: "chat-text",
          messages: [{ role: "user", content: "hi" }],
        });
        assert.ok(res.choices[0].message.content);
        assert.equal(last().path, "/openai/v1/chat/completions");
        assert.equal(last().headers["api-key"], AZURE_TEST_KEY);
        assert.equal(last().headers.authorization, undefined);
        assert.equal(last().json?.model, "chat-text");
      },
    );

    await t.step(
      "chat, stream: Azure's opening filter chunk and the content reach the SDK",
      async () => {
        const stream = await openai.chat.completions.create({
          model: "chat-text",
          messages: [{ role: "user", content: "hi" }],
          stream: true,
        });
        let text = "";
        let chunks = 0;
        for await (const chunk of stream) {
          chunks++;
          text += chunk.choices[0]?.delta?.content ?? "";
        }
        assert.ok(text.length > 0);
        assert.ok(chunks > 1);
      },
    );

    await t.step("responses, JSON and stream: relayed to /openai/v1/responses", async () => {
      const res = await openai.responses.create({ model: "resp-text", input: "hi" });
      assert.ok(res.output_text.length > 0);
      assert.equal(last().path, "/openai/v1/responses");
      assert.equal(last().headers["api-key"], AZURE_TEST_KEY);
      const stream = await openai.responses.create({
        model: "resp-text",
        input: "hi",
        stream: true,
      });
      const types: string[] = [];
      for await (const e of stream) types.push(e.type);
      assert.equal(types.at(-1), "response.completed");
    });

    await t.step("an Anthropic client is converted to Azure chat, JSON and stream", async () => {
      const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
      const msg = await anthropic.messages.create({
        model: "chat-text",
        max_tokens: 100,
        messages: [{ role: "user", content: "hi" }],
      });
      assert.equal(msg.content[0].type, "text");
      assert.equal(last().path, "/openai/v1/chat/completions");
      const stream = anthropic.messages.stream({
        model: "chat-text",
        max_tokens: 100,
        messages: [{ role: "user", content: "hi" }],
      });
      const final = await stream.finalMessage();
      assert.equal(final.stop_reason, "end_turn");
      assert.ok(final.content.some((b) => b.type === "text" && b.text.length > 0));
    });

    await t.step("the key or token Azure echoes is scrubbed, JSON and stream", async () => {
      for (const route of ["chat", "entra"]) {
        // A stream's echo is in one error event (a success's text is split into deltas).
        for (const stream of [false, true]) {
          const model = `${route}-${stream ? "errevent-" : ""}echo`;
          const res = await fetch(`${h.url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
            body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] }),
          });
          const text = await res.text();
          assert.equal(res.status, 200);
          assert.ok(text.includes("[redacted]"), text);
          assert.ok(!text.includes(AZURE_TEST_KEY) && !text.includes(AZURE_TEST_ENTRA_TOKEN));
        }
      }
    });

    await t.step(
      "an Entra token from a file goes as Bearer, and is re-read on reload",
      async () => {
        const res = await openai.chat.completions.create({
          model: "entra-text",
          messages: [{ role: "user", content: "hi" }],
        });
        assert.ok(res.choices[0].message.content);
        assert.equal(last().headers.authorization, `Bearer ${AZURE_TEST_ENTRA_TOKEN}`);
        assert.equal(last().headers["api-key"], undefined);
        await Deno.writeTextFile(tokenFile, "renewed-entra-token-0001\n");
        const outcome = new Reloader(h.gw, () => azureConfig(azure.url, tokenFile)).reload("test");
        assert.equal(outcome.outcome, "applied");
        const refused = await fetch(`${h.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: "entra-text",
            messages: [{ role: "user", content: "hi" }],
          }),
        });
        await refused.body?.cancel();
        assert.equal(last().headers.authorization, "Bearer renewed-entra-token-0001");
        // The mock knows only the first token: Azure's 401 is the operator's credential failure.
        assert.equal(refused.status, 502);
      },
    );

    await t.step(
      "a Codex WebSocket session (warm-up, chained turn): each turn one POST /responses",
      async () => {
        const before = azure.requests.length;
        const [warm, answered] = await wsExchange(h.url, [
          { type: "response.create", model: "resp-text", input: [], generate: false, store: false },
          (done: WsEvent[][]) => ({
            type: "response.create",
            model: "resp-text",
            input: [{ type: "message", role: "user", content: "hello over ws" }],
            previous_response_id: lastResponseId(done),
            store: false,
          }),
        ]);
        assert.equal(warm.at(-1)!.type, "response.completed");
        const done = answered.at(-1)!;
        assert.equal(done.type, "response.completed", JSON.stringify(done));
        const output = (done.response as { output: { content?: { text: string }[] }[] }).output;
        assert.match(output.at(-1)!.content![0].text, /hello over ws/);
        // The warm-up is answered here; the turn is one call, its key only in `api-key`.
        const calls = azure.requests.slice(before);
        assert.deepEqual(calls.map((c) => c.path), ["/openai/v1/responses"]);
        assert.equal(calls[0].headers["api-key"], AZURE_TEST_KEY);
        assert.equal(calls[0].json?.previous_response_id, undefined);
      },
    );

    await t.step("compact refuses an Azure target", async () => {
      const res = await post(`${h.url}/v1/responses/compact`, openaiHeaders(), {
        model: "resp-text",
        input: "hi",
      });
      assert.equal(res.status, 400);
      assert.match((await res.json()).error.message, /not served through platform azure-openai/);
    });

    await t.step("the format's model list is not read from a platform provider", async () => {
      await h.gw.providerModels.refresh();
      assert.deepEqual(azure.requests.filter((q) => q.method === "GET"), []);
    });

    await t.step("metrics name the platform", () => {
      assert.match(h.gw.metrics.expose(), /gen_ai_provider_name="azure\.ai\.openai"/);
    });
  } finally {
    await h.close();
    await azure.close();
    await Deno.remove(tokenFile);
  }
});

Deno.test("azure-openai: an unreadable token file and a foreign block are config errors", () => {
  const provider = (extra: Record<string, unknown>) => ({
    providers: [{
      name: "az",
      api: "chat",
      platform: "azure-openai",
      base_url: "https://r.openai.azure.com/openai/v1",
      ...extra,
    }],
    routes: [{ models: ["*"], provider: "az" }],
  });
  assert.throws(
    () => platformConfig(provider({ azure: { bearer_token_file: "/nonexistent/token" } })),
    /providers\[0\]\.azure\.bearer_token_file: cannot read the file \(NotFound\)/,
  );
  assert.throws(
    () => platformConfig(provider({ api: "messages" })),
    /providers\[0\]\.api: platform azure-openai carries api chat, responses/,
  );
  assert.throws(
    () => platformConfig(provider({ base_url: undefined })),
    /providers\[0\]\.base_url: required for platform azure-openai/,
  );
});
