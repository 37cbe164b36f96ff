/**
 * The published CLIs through cloud-platform routes (docs/providers.md): `claude -p` on a Bedrock
 * Claude route (InvokeModel, SigV4 checked by tests/mock/bedrock.ts), text and a tool round trip,
 * and `codex exec` on an Azure OpenAI Responses route. Skipped when the CLIs are not installed.
 */
import assert from "node:assert/strict";
import { startMockBedrock } from "../mock/bedrock.ts";
import { AZURE_TEST_KEY, startMockAzure } from "../mock/azure.ts";
import type { MockUpstream } from "../mock/upstream.ts";
import { bedrockProvider, platformConfig, startPlatformGateway } from "../platform_harness.ts";
import { claude, codex, installed, PROMPT, type RunResult } from "./cli.ts";

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
        const [model, expect] of [["claude-text-cli", PROMPT], ["claude-tool-cli", "Tool said:"]]
      ) {
        await t.step(`claude -p --model ${model}`, async () => {
          const from = bedrock.requests.length;
          const r = await claude(h.url, ["--model", model, PROMPT]);
          assert.equal(r.code, 0, why(r, bedrock));
          assert.ok(r.stdout.includes(expect), why(r, bedrock));
          const calls = bedrock.requests.slice(from)
            .filter((q) => q.path === `/model/${model}/invoke-with-response-stream`);
          assert.ok(calls.length >= (model.includes("tool") ? 2 : 1), why(r, bedrock));
          for (const q of calls) {
            assert.equal(q.json?.anthropic_version, "bedrock-2023-05-31");
            assert.ok(Array.isArray(q.json?.anthropic_beta), "Claude Code's betas moved");
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
