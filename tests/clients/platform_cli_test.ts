/**
 * The published CLIs through cloud-platform routes (docs/providers.md): `claude -p` on a Bedrock
 * Claude route (InvokeModel, SigV4 checked by tests/mock/bedrock.ts), text and a tool round trip,
 * `codex exec` on an Azure OpenAI Responses route, and Claude Code in Vertex AI mode (the gateway
 * as its Vertex) on Claude, GPT and Gemini routes and on a Vertex Claude provider. Skipped when
 * the CLIs are not installed.
 */
import assert from "node:assert/strict";
import { startMockBedrock } from "../mock/bedrock.ts";
import { AZURE_TEST_KEY, startMockAzure } from "../mock/azure.ts";
import type { MockUpstream } from "../mock/upstream.ts";
import { bedrockProvider, platformConfig, startPlatformGateway } from "../platform_harness.ts";
import { claude, claudeVertex, codex, installed, PROMPT, type RunResult } from "./cli.ts";
import { startHarness } from "../helpers.ts";
import { CLAUDE_AT, modelCalls, startVertexGateway } from "../vertex_harness.ts";

const why = (r: RunResult, upstream: MockUpstream) =>
  `exit ${r.code}${r.timedOut ? " (killed)" : ""}\nstdout: ${r.stdout.slice(-1500)}\n` +
  `stderr: ${r.stderr.slice(-1500)}\nupstream: ${
    upstream.requests.map((q) => `${q.method} ${q.path}`).join("\n")
  }`;

Deno.test({
  name: "claude -p through a Bedrock Claude route",
  ignore: !installed(),
  async fn(t) {
    const bedrock = await startMockBedrock();
    const h = await startPlatformGateway(platformConfig({
      providers: [bedrockProvider("bedrock", bedrock.url)],
      // Claude Code's own background calls (a small model) go there too.
      routes: [{ models: ["*"], provider: "bedrock" }],
    }));
    try {
      for (
        const [model, expect] of [["claude-text-cli", PROMPT], [
          "claude-tool-cli",
          "Tool said:",
        ]]
      ) {
        await t.step(`claude -p --model ${model}`, async () => {
          const from = bedrock.requests.length;
          const r = await claude(h.url, ["--model", model, PROMPT]);
          assert.equal(r.code, 0, why(r, bedrock));
          assert.ok(r.stdout.includes(expect), why(r, bedrock));
          const calls = bedrock.requests.slice(from)
            .filter((q) => q.path === `/model/${model}/invoke-with-response-stream`);
          assert.ok(
            calls.length >= (model.includes("tool") ? 2 : 1),
            why(r, bedrock),
          );
          for (const q of calls) {
            assert.equal(q.json?.anthropic_version, "bedrock-2023-05-31");
            assert.ok(
              Array.isArray(q.json?.anthropic_beta),
              "Claude Code's betas moved",
            );
          }
        });
      }
    } finally {
      await h.close();
      await bedrock.close();
    }
  },
});

Deno.test({
  name: "codex exec through an Azure OpenAI Responses route",
  ignore: !installed(),
  async fn() {
    const azure = await startMockAzure();
    const h = await startPlatformGateway(platformConfig({
      providers: [{
        name: "azure",
        api: "responses",
        platform: "azure-openai",
        base_url: `${azure.url}/openai/v1`,
        api_key: AZURE_TEST_KEY,
      }],
      routes: [{ models: ["*"], provider: "azure" }],
    }));
    try {
      const r = await codex(h.url, ["-m", "resp-text-cli", PROMPT]);
      assert.equal(r.code, 0, why(r, azure));
      assert.ok(r.stdout.includes(PROMPT), why(r, azure));
      const calls = azure.requests.filter((q) => q.path === "/openai/v1/responses");
      assert.ok(calls.length > 0, why(r, azure));
      assert.ok(calls.every((q) => q.headers["api-key"] === AZURE_TEST_KEY));
    } finally {
      await h.close();
      await azure.close();
    }
  },
});

/** The Vertex path Claude Code calls for `model` (as `ANTHROPIC_VERTEX_BASE_URL`'s `/v1` prefix). */
const VERTEX_CLIENT_PATH =
  /^\/v1\/projects\/client-project\/locations\/us-east5\/publishers\/anthropic\/models\//;

Deno.test({
  name: "claude -p in Vertex AI mode: a tool task on a Claude, a GPT and a Gemini route; /context",
  ignore: !installed(),
  async fn(t) {
    const h = await startHarness();
    const report = (r: RunResult, from: number) =>
      `${why(r, h.upstream)}\ngateway log: ${
        h.logs.slice(from).map((l) => `${l.status} ${l.path} → ${l.provider}`)
          .join("\n")
      }`;
    try {
      // The mock calls Claude Code's first tool with arguments it refuses; "Tool said:" comes
      // back only when the tool's error reached the provider in its own format.
      for (
        const [model, path] of [
          ["msg-tool-cli", "/v1/messages"],
          ["chat-tool-cli", "/v1/chat/completions"],
          ["resp-tool-cli", "/v1/responses"],
          ["gem-tool-cli", "/v1beta/models/gem-tool-cli:streamGenerateContent"],
        ]
      ) {
        await t.step(`claude -p --model ${model} (Vertex mode)`, async () => {
          const from = h.logs.length;
          const calls = h.upstream.requests.length;
          const r = await claudeVertex(h.url, ["--model", model, PROMPT]);
          assert.equal(r.code, 0, report(r, from));
          assert.ok(r.stdout.includes("Tool said:"), report(r, from));
          const served = h.logs.slice(from).filter((l) => l.model === model);
          assert.ok(served.length >= 2, report(r, from));
          for (const l of served) {
            assert.match(String(l.path), VERTEX_CLIENT_PATH, report(r, from));
            assert.match(
              String(l.path),
              new RegExp(`/${model}:streamRawPredict$`),
            );
            assert.equal(l.status, 200, report(r, from));
          }
          const sent = h.upstream.requests.slice(calls).filter((q) => q.path === path);
          assert.ok(sent.length >= 2, report(r, from));
        });
      }
      await t.step(
        'claude -p "/context" (Vertex mode: count-tokens:rawPredict)',
        async () => {
          const from = h.logs.length;
          const calls = h.upstream.requests.length;
          const r = await claudeVertex(h.url, [
            "--model",
            "msg-text-context",
            "/context",
          ]);
          assert.equal(r.code, 0, report(r, from));
          assert.ok(r.stdout.includes("Context Usage"), report(r, from));
          // Claude Code falls back to a local estimate when counting fails: the provider's record
          // is the proof.
          const counted = h.upstream.requests.slice(calls)
            .filter((q) => q.path === "/v1/messages/count_tokens");
          assert.ok(
            counted.length >= 5,
            `${counted.length} counted\n${report(r, from)}`,
          );
          assert.ok(
            counted.every((q) => q.json?.anthropic_version === undefined),
          );
        },
      );
    } finally {
      await h.close();
    }
  },
});

Deno.test({
  name: "claude -p in Vertex AI mode on a Vertex Claude route: relayed with the gateway's token",
  ignore: !installed(),
  async fn() {
    const h = await startVertexGateway({
      routes: [{ models: ["*"], provider: "vertex-claude" }],
    });
    try {
      const from = modelCalls(h.vertex).length;
      const r = await claudeVertex(h.url, ["--model", "vc-tool-cli", PROMPT]);
      assert.equal(r.code, 0, why(r, h.vertex));
      assert.ok(r.stdout.includes("Tool said:"), why(r, h.vertex));
      const calls = modelCalls(h.vertex).slice(from);
      assert.ok(calls.length >= 2, why(r, h.vertex));
      for (const q of calls) {
        assert.equal(q.path, `${CLAUDE_AT}/vc-tool-cli:streamRawPredict`);
        assert.equal(q.json?.anthropic_version, "vertex-2023-10-16");
        assert.match(q.headers.authorization ?? "", /^Bearer ya29\.mock-/);
      }
      assert.ok(
        h.logs.filter((l) => l.model === "vc-tool-cli").every((l) => l.passthrough),
      );
    } finally {
      await h.close();
    }
  },
});
