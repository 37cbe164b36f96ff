/** Shared test fixtures: an in-process gateway on loopback in front of the mock upstream. */
import { type Config, validateConfig } from "../src/config.ts";
import { setAccessLogSink } from "../src/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import { type MockUpstream, startMockUpstream } from "./mock/upstream.ts";

export const KEY = "sk-test-key-team-a";
/** A second client key, configured only by its SHA-256 digest. */
export const HASHED_KEY = "sk-test-key-team-b";
export const PROVIDER_KEY = "sk-provider-secret";

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Routes by prefix: `pt-*` Responses passthrough, `resp-*` Responses (no passthrough flag),
 * `chat-*` chat, `msg-*` Anthropic messages, `gem-*` Gemini, `demo-*` the demo provider,
 * `renamed-*` chat with an upstream rename to `chat-text-renamed`. The rest of the model name
 * picks the mock's scenario (text, tool, think, cut, stall, slow, err429, …).
 */
export async function mockConfig(
  upstream: string,
  timeouts: Record<string, number> = {},
): Promise<Config> {
  const provider = (name: string, api: string, base: string) => ({
    name,
    api,
    base_url: upstream + base,
    api_key: PROVIDER_KEY,
    timeouts,
  });
  return validateConfig({
    listen: { hostname: "127.0.0.1", port: 0 },
    keys: [
      { name: "team-a", key: KEY },
      { name: "team-b", sha256: await sha256Hex(HASHED_KEY) },
    ],
    providers: [
      provider("oai", "responses", "/v1"),
      provider("oai-chat", "chat", "/v1"),
      provider("anthropic", "messages", ""),
      provider("gemini", "generate-content", ""),
      { name: "demo", api: "demo" },
    ],
    routes: [
      { models: ["pt-*"], provider: "oai", passthrough: true },
      { models: ["resp-*"], provider: "oai" },
      { models: ["chat-*"], provider: "oai-chat" },
      { models: ["renamed-*"], provider: "oai-chat", model: "chat-text-renamed" },
      { models: ["msg-*"], provider: "anthropic" },
      { models: ["gem-*"], provider: "gemini" },
      { models: ["demo-*"], provider: "demo" },
    ],
  });
}

export interface Harness {
  url: string;
  upstream: MockUpstream;
  /** Access-log lines written while the harness ran. */
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** Starts the mock upstream and a gateway (in this process) configured for it. */
export async function startHarness(
  timeouts: Record<string, number> = {},
): Promise<Harness> {
  const upstream = await startMockUpstream();
  const config = await mockConfig(upstream.url, timeouts);
  const gw = await createGateway(config);
  const logs: Record<string, unknown>[] = [];
  const previous = setAccessLogSink((line) => logs.push(JSON.parse(line)));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, createHandler(gw));
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    upstream,
    logs,
    async close() {
      await server.shutdown();
      await upstream.close();
      setAccessLogSink(previous);
    },
  };
}

export const openaiHeaders = (key = KEY) => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
});
export const anthropicHeaders = (key = KEY) => ({
  "x-api-key": key,
  "anthropic-version": "2023-06-01",
  "content-type": "application/json",
});
export const googleHeaders = (key = KEY) => ({
  "x-goog-api-key": key,
  "content-type": "application/json",
});

export function post(url: string, headers: Record<string, string>, body: unknown) {
  return fetch(url, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Minimal valid bodies per endpoint. */
export const bodies = {
  chat: (model: string, stream = false) => ({
    model,
    stream,
    messages: [{ role: "user", content: "hi there" }],
  }),
  responses: (model: string, stream = false) => ({ model, stream, input: "hi there" }),
  messages: (model: string, stream = false) => ({
    model,
    stream,
    max_tokens: 100,
    messages: [{ role: "user", content: "hi there" }],
  }),
  gemini: () => ({ contents: [{ role: "user", parts: [{ text: "hi there" }] }] }),
};
