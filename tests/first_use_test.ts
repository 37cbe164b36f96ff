/**
 * Modules the gateway loads on first use (docs/performance.md: heap that a gateway not using
 * them would carry costs every request's garbage collection): the AWS event-stream codec and
 * SigV4 signer, and Node's zlib. Each case is a fresh gateway process whose first request needs
 * one, so a path that used the codec before loading it would fail here, not be hidden by an
 * earlier test of the same process that loaded it. The event-stream framings await the codec
 * where the core first scans or writes with them: a client's converted stream, a relayed stream
 * the client's framing re-frames, and a provider's stream read. (The load starts when a framing
 * opens, before the provider call: in the last two cases it is usually done by the first scan
 * even without the await, so only the first case fails reliably when an await is missing.)
 */
import assert from "node:assert/strict";
// A SigV4 signer other than the gateway's (see bedrock_client_test.ts). Test-only.
// deno-lint-ignore no-import-prefix
import { AwsV4Signer } from "npm:aws4fetch@1.0.20";
import { KEY, mockConfig, post } from "./helpers.ts";
import { clientFrames } from "./bedrock_client_harness.ts";
import { startMockBedrock } from "./mock/bedrock.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { bedrockProvider } from "./platform_harness.ts";
import { spawnGateway } from "./process.ts";
import { bedrockHeaders, bedrockModelPath, bodies } from "./requests.ts";

/** One fresh gateway (main.ts) on the mock config plus a Converse provider on aws-bedrock. */
async function freshGateway(test: (url: string) => Promise<void>) {
  const upstream = await startMockUpstream();
  const bedrock = await startMockBedrock();
  const config = await mockConfig(upstream.url);
  const path = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      ...config,
      providers: [...config.providers, {
        ...bedrockProvider("bedrock", bedrock.url),
        api: "converse",
      }],
      routes: [...config.routes, { models: ["anthropic.*"], provider: "bedrock" }],
    }),
  );
  const gw = await spawnGateway("main.ts", ["--config", path], {});
  try {
    await test(gw.url);
  } finally {
    gw.process.kill("SIGTERM");
    const { code, stderr } = await gw.output();
    assert.equal(code, 0, stderr);
    await Promise.all([upstream.close(), bedrock.close(), Deno.remove(path)]);
  }
}

/** The text of a Bedrock client's event stream (Converse deltas or InvokeModel chunks). */
function streamedText(bytes: Uint8Array): string {
  // Both carry the text in `delta.text` (a chunk as its unwrapped Anthropic event).
  return clientFrames(bytes).map(({ data }) => {
    const delta = data.delta as { text?: unknown } | undefined;
    return typeof delta?.text === "string" ? delta.text : "";
  }).join("");
}

Deno.test("first use: a signed ConverseStream, converted from a Messages provider, in a fresh process", () =>
  freshGateway(async (url) => {
    const body = JSON.stringify(bodies.converse());
    const { headers } = await new AwsV4Signer({
      url: url + bedrockModelPath("msg-text", "converse-stream"),
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      accessKeyId: "team-a",
      secretAccessKey: KEY,
      service: "bedrock",
      region: "eu-west-3",
    }).sign();
    const res = await fetch(url + bedrockModelPath("msg-text", "converse-stream"), {
      method: "POST",
      headers,
      body,
    });
    assert.equal(res.status, 200);
    const bytes = new Uint8Array(await res.arrayBuffer());
    assert.equal(streamedText(bytes), "Hello from messages mock: hi there");
    assert.equal(clientFrames(bytes).at(-1)?.type, "metadata");
  }));

Deno.test("first use: InvokeModelWithResponseStream relayed from a Messages provider, in a fresh process", () =>
  freshGateway(async (url) => {
    const path = bedrockModelPath("msg-text", "invoke-with-response-stream");
    const res = await post(url + path, bedrockHeaders(), bodies.invoke());
    assert.equal(res.status, 200);
    const bytes = new Uint8Array(await res.arrayBuffer());
    assert.equal(streamedText(bytes), "Hello from messages mock: hi there");
    assert.equal(clientFrames(bytes).at(-1)?.data.type, "message_stop");
  }));

Deno.test("first use: a chat stream from a Converse provider on aws-bedrock (signed), in a fresh process", () =>
  freshGateway(async (url) => {
    const res = await post(
      url + "/v1/chat/completions",
      bedrockHeaders(),
      bodies.chat("anthropic.claude-text", true),
    );
    assert.equal(res.status, 200);
    const text = await res.text();
    const deltas = text.split("\n").filter((l) => l.startsWith("data: {")).map((l) =>
      JSON.parse(l.slice(6)).choices[0]?.delta?.content ?? ""
    );
    assert.equal(deltas.join(""), "Hello from converse mock: hi there");
    assert.match(text, /data: \[DONE\]\n\n$/);
  }));

Deno.test("first use: a gzip-compressed request body, in a fresh process", () =>
  freshGateway(async (url) => {
    const json = new Blob([JSON.stringify(bodies.chat("chat-text"))]).stream();
    const res = await fetch(url + "/v1/chat/completions", {
      method: "POST",
      headers: { ...bedrockHeaders(), "content-encoding": "gzip" },
      body: await new Response(json.pipeThrough(new CompressionStream("gzip"))).bytes(),
    });
    assert.equal(res.status, 200);
    assert.equal(
      (await res.json()).choices[0].message.content,
      "Hello from chat mock: hi there",
    );
  }));
