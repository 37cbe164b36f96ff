/**
 * Claude Code in its Bedrock mode (`CLAUDE_CODE_USE_BEDROCK=1`) aimed at the gateway, as
 * docs/cloud-clients.md tells users to, in both of its credential setups: the gateway key as a
 * Bedrock API key (`CLAUDE_CODE_SKIP_BEDROCK_AUTH=1`, `AWS_BEARER_TOKEN_BEDROCK`, or
 * `ANTHROPIC_AUTH_TOKEN`), and SigV4 with the key's name and the key as the AWS access key pair.
 * Each completes a tool round trip on a Claude route (Anthropic's API, and Bedrock's own), a GPT
 * route and a Gemini route (tests/bedrock_client_harness.ts). Skipped when the CLIs are not
 * installed.
 */
import assert from "node:assert/strict";
import {
  type BedrockClientHarness,
  KEY,
  startBedrockClientHarness,
} from "../bedrock_client_harness.ts";
import type { RecordedRequest } from "../mock/upstream.ts";
import { claudeWith, installed, PROMPT, type RunResult } from "./cli.ts";

/** The two setups: their environment, and the authorization every call must carry. */
const SETUPS = {
  "API key": (url: string) => ({
    env: {
      CLAUDE_CODE_USE_BEDROCK: "1",
      ANTHROPIC_BEDROCK_BASE_URL: url,
      CLAUDE_CODE_SKIP_BEDROCK_AUTH: "1",
      AWS_BEARER_TOKEN_BEDROCK: KEY,
      AWS_REGION: "us-east-1",
    },
    authorization: new RegExp(`^Bearer ${KEY}$`),
  }),
  "SigV4": (url: string) => ({
    env: {
      CLAUDE_CODE_USE_BEDROCK: "1",
      ANTHROPIC_BEDROCK_BASE_URL: url,
      AWS_ACCESS_KEY_ID: "team-a",
      AWS_SECRET_ACCESS_KEY: KEY,
      AWS_REGION: "us-east-1",
    },
    authorization: /^AWS4-HMAC-SHA256 Credential=team-a\/\d{8}\/us-east-1\/bedrock\/aws4_request,/,
  }),
};

/** The routes: the CLI's model, the mock that answers and the path its call reaches. */
const ROUTES: [
  family: string,
  model: string,
  mock: "vendors" | "bedrock",
  path: string,
][] = [
  ["Claude on Anthropic", "msg-tool-cli", "vendors", "/v1/messages"],
  [
    "Claude on Bedrock",
    "bi-tool-cli",
    "bedrock",
    "/model/bi-tool-cli/invoke-with-response-stream",
  ],
  ["GPT", "chat-tool-cli", "vendors", "/v1/chat/completions"],
  [
    "Gemini",
    "gem-tool-cli",
    "vendors",
    "/v1beta/models/gem-tool-cli:streamGenerateContent",
  ],
];

const why = (r: RunResult, h: BedrockClientHarness) =>
  `exit ${r.code}${r.timedOut ? " (killed)" : ""}\nstdout: ${r.stdout.slice(-1200)}\n` +
  `stderr: ${r.stderr.slice(-1200)}\ngateway: ${
    h.logs.map((l) => `${l.status} ${l.path} ${l.error ?? ""}`).join("\n")
  }`;

Deno.test({
  name: "claude -p in Bedrock mode: a tool round trip on every family, in both credential setups",
  ignore: !installed(),
  async fn(t) {
    const h = await startBedrockClientHarness();
    try {
      for (const [setup, aim] of Object.entries(SETUPS)) {
        const { env, authorization } = aim(h.url);
        for (const [family, model, mock, path] of ROUTES) {
          await t.step(`${setup}: ${family} (--model ${model})`, async () => {
            const received = h.received.length;
            const upstream: RecordedRequest[] = h[mock].requests;
            const before = upstream.length;
            const r = await claudeWith(env, ["--model", model, PROMPT]);
            assert.equal(r.code, 0, why(r, h));
            assert.ok(r.stdout.includes("Tool said:"), why(r, h));
            const calls = upstream.slice(before).filter((q) => q.path === path);
            assert.ok(
              calls.length >= 2,
              `the tool's result went back: ${why(r, h)}`,
            );
            const mine = h.received.slice(received);
            const invokes = mine.filter((q) => q.path.startsWith("/model/"));
            assert.ok(
              invokes.some((q) => q.path === `/model/${model}/invoke-with-response-stream`),
            );
            for (const q of invokes) {
              assert.match(q.authorization, authorization, q.path);
            }
          });
        }
      }

      await t.step(
        "ANTHROPIC_AUTH_TOKEN in place of AWS_BEARER_TOKEN_BEDROCK",
        async () => {
          const { AWS_BEARER_TOKEN_BEDROCK: _, ...env } = SETUPS["API key"](h.url).env;
          const r = await claudeWith({ ...env, ANTHROPIC_AUTH_TOKEN: KEY }, [
            "--model",
            "chat-text-cli",
            PROMPT,
          ]);
          assert.equal(r.code, 0, why(r, h));
          assert.ok(r.stdout.includes(PROMPT), why(r, h));
        },
      );

      await t.step(
        "a wrong key: the CLI shows Bedrock's refusal, nothing goes upstream",
        async () => {
          const before = h.vendors.requests.length + h.bedrock.requests.length;
          // Claude Code retries a 403 for over a minute by default.
          const env = { ...SETUPS.SigV4(h.url).env, AWS_SECRET_ACCESS_KEY: "sk-wrong" };
          const r = await claudeWith({ ...env, CLAUDE_CODE_MAX_RETRIES: "0" }, [
            "--model",
            "chat-text-cli",
            PROMPT,
          ]);
          assert.equal(r.timedOut, false, why(r, h));
          assert.equal(r.code, 1, why(r, h));
          assert.match(r.stdout, /403 The request signature we calculated does not match/);
          assert.equal(h.vendors.requests.length + h.bedrock.requests.length, before);
        },
      );
    } finally {
      await h.close();
    }
  },
});
