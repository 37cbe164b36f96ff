/**
 * Shared fixtures for the real-SDK tests (tests/sdk_test.ts): the provider routes every client is
 * aimed at, what the mock upstream answers on each, and checks that a call really reached the
 * provider in the provider's own format.
 */
import assert from "node:assert/strict";
import type { RecordedRequest } from "../mock/upstream.ts";
import { type Harness, KEY } from "../helpers.ts";

export { KEY, startHarness } from "../helpers.ts";
export type { Harness } from "../helpers.ts";

/** A provider route of the test config (tests/helpers.ts), picked by the model-name prefix. */
export interface Provider {
  /** Step label: the provider API (and "passthrough" for `pt-*`). */
  label: string;
  prefix: "chat" | "resp" | "pt" | "msg" | "gem";
  /** The format id of the mock vendor that answers, as it names itself in its replies. */
  vendor: string;
}

export const CHAT: Provider = { label: "chat", prefix: "chat", vendor: "chat" };
export const RESPONSES: Provider = { label: "responses", prefix: "resp", vendor: "responses" };
export const PASSTHROUGH: Provider = {
  label: "responses-passthrough",
  prefix: "pt",
  vendor: "responses",
};
export const MESSAGES: Provider = { label: "messages", prefix: "msg", vendor: "messages" };
export const GEMINI: Provider = {
  label: "generate-content",
  prefix: "gem",
  vendor: "generate-content",
};

/** One route per provider API; every client is run against each. */
export const PROVIDERS: Provider[] = [CHAT, RESPONSES, MESSAGES, GEMINI];

export const model = (p: Provider, scenario: string) => `${p.prefix}-${scenario}`;

export const MODES = ["json", "stream"] as const;
export type Mode = typeof MODES[number];

/** The user turn every test sends; the mock echoes it. */
export const USER = "Hi from a real SDK";

/** What the mock answers a plain text turn. */
export const replyText = (p: Provider) => `Hello from ${p.vendor} mock: ${USER}`;

/** The mock's reasoning for a `think` model (before the reply text). */
export const REASONING = `The user wrote "${USER}". A short answer will do.`;

export const TOOL_NAME = "get_weather";
export const TOOL_DESCRIPTION = "Current weather in a city";
export const TOOL_ARGS = { city: "Paris" };
export const TOOL_RESULT = "18 degrees and sunny";
/** The mock's answer once the last turn carries the tool result. */
export const TOOL_REPLY = `Tool said: ${TOOL_RESULT}`;
/** `tool` calls the tool; `think-tool` reasons first, so the replay carries reasoning too. */
export const TOOL_SCENARIOS = ["tool", "think-tool"] as const;
export const TOOL_SCHEMA = {
  type: "object",
  properties: { city: { type: "string", description: "City name" } },
  required: ["city"],
};

/**
 * The mock's usage (tests/mock/scenario.ts TOKENS), vendor-neutral: `input` counts cache reads
 * and writes, `output` counts reasoning.
 */
export const USAGE = { input: 11, cacheRead: 3, output: 7, reasoning: 0 };
export const THINK_USAGE = { input: 11, cacheRead: 3, output: 12, reasoning: 5 };

/** Where the gateway must send a call for this provider, and the body shape it must have. */
function expectUpstream(p: Provider, modelName: string, r: RecordedRequest) {
  const where = `upstream request ${r.method} ${r.path}${r.search}`;
  const body = r.json ?? {};
  assert.ok(!JSON.stringify(r.headers).includes(KEY), `${where}: the client's key went upstream`);
  switch (p.vendor) {
    case "chat":
      assert.equal(r.path, "/v1/chat/completions", `${where}: expected the chat provider path`);
      assert.ok(Array.isArray(body.messages), `${where}: chat body needs messages[]`);
      break;
    case "responses":
      assert.equal(r.path, "/v1/responses", `${where}: expected the responses provider path`);
      assert.ok(body.input !== undefined, `${where}: responses body needs input`);
      break;
    case "messages":
      assert.equal(r.path, "/v1/messages", `${where}: expected the messages provider path`);
      assert.ok(Array.isArray(body.messages), `${where}: messages body needs messages[]`);
      assert.equal(typeof body.max_tokens, "number", `${where}: messages body needs max_tokens`);
      break;
    case "generate-content":
      assert.match(
        r.path,
        new RegExp(`^/v1beta/models/${modelName}:(generateContent|streamGenerateContent)$`),
        `${where}: expected the Gemini provider path for ${modelName}`,
      );
      assert.ok(Array.isArray(body.contents), `${where}: Gemini body needs contents[]`);
      return;
  }
  assert.equal(body.model, modelName, `${where}: model`);
}

/**
 * Marks the upstream request log; `landed()` then asserts that `count` requests were made since,
 * each on the provider's own path and in its own format, and returns them.
 */
export function upstreamMark(h: Harness) {
  const start = h.upstream.requests.length;
  return {
    landed(p: Provider, modelName: string, count = 1): RecordedRequest[] {
      const sent = h.upstream.requests.slice(start);
      assert.equal(
        sent.length,
        count,
        `expected ${count} upstream request(s), got ${sent.length}: ` +
          sent.map((r) => `${r.method} ${r.path}`).join(", "),
      );
      for (const r of sent) expectUpstream(p, modelName, r);
      return sent;
    },
  };
}

/** Throws unless `e` is an instance of `cls` with HTTP `status`; says what it got instead. */
export function assertErrorStatus(
  e: unknown,
  // deno-lint-ignore no-explicit-any
  cls: abstract new (...args: any[]) => unknown,
  status: number,
  statusField: "status" | "statusCode" = "status",
): true {
  const got = e as Record<string, unknown> | undefined;
  const desc = `${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`;
  assert.ok(e instanceof cls, `expected ${cls.name}, got ${desc}`);
  assert.equal(got?.[statusField], status, `expected ${statusField} ${status}, got ${desc}`);
  return true;
}

/** Awaits `run`, which must reject; returns what it threw. */
export async function rejection(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (e) {
    return e;
  }
  assert.fail("expected the call to fail, it succeeded");
}

/**
 * `t.step`, with the upstream requests the step made added to its failure message: they show
 * what the gateway sent the provider (path, and the start of the body).
 */
export function step(
  t: Deno.TestContext,
  h: Harness,
  name: string,
  fn: () => Promise<void>,
): Promise<boolean> {
  return t.step(name, async () => {
    const start = h.upstream.requests.length;
    try {
      await fn();
    } catch (e) {
      const sent = h.upstream.requests.slice(start).map((r) =>
        `  ${r.method} ${r.path}${r.search} ${r.body.slice(0, 300)}`
      );
      if (e instanceof Error && sent.length) {
        e.message += `\nupstream requests during this step:\n${sent.join("\n")}`;
      }
      throw e;
    }
  });
}
