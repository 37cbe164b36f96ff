/**
 * A realistic agent session replayed through the gateway against providers that cache prompts
 * as their vendors document (tests/mock/prompt_cache.ts): a system prompt and tool definitions of
 * several thousand tokens, then a dozen requests of a tool loop (a question, the model's tool
 * call, its result, the model's answer; six times), reasoning on, each request the previous one
 * plus what was said since. Every client format (chat, Responses over HTTP and over the
 * WebSocket, Messages, Gemini, Interactions) runs it against every target family (Anthropic,
 * Bedrock InvokeModel Claude, Converse Claude, Vertex Claude, OpenAI, Gemini), with the route's
 * `prompt_cache` policy `auto` or `client`; also against a pool of three Anthropic keys and a
 * route of two equal Anthropic targets. What the client was told of its usage is kept per
 * request, and what reached the provider.
 *
 * Used by tests/prompt_cache_replay_test.ts (the assertions) and bench/prompt_cache.ts (the
 * BENCHMARKS.md table).
 */
import type * as ir from "../src/kit/ir.ts";
import type { TestFormat } from "./formats.ts";
import { TEST_FORMATS } from "./formats.ts";
import { PROVIDER_KEY } from "./helpers.ts";
import { turn, WsSession } from "./loop_turns.ts";
import { startMockBedrock } from "./mock/bedrock.ts";
import { PromptCaches } from "./mock/prompt_cache.ts";
import { type MockUpstream, type RecordedRequest, startMockUpstream } from "./mock/upstream.ts";
import { type MockVertex, startMockVertex } from "./mock/vertex.ts";
import { bedrockProvider, platformConfig, startPlatformGateway } from "./platform_harness.ts";
import { onVertex } from "./vertex_harness.ts";

/** The six target families, each a route per policy. */
export const TARGETS = ["anthropic", "bedrock", "converse", "vertex", "openai", "gemini"] as const;
export type Target = (typeof TARGETS)[number] | "pool" | "pair" | "llama";
export type Policy = "auto" | "client" | "off";

/** How a client runs the session: a format over HTTP, or the Responses WebSocket. */
export interface Client {
  name: string;
  format: TestFormat;
  ws?: boolean;
  /**
   * Each request sends only what is new and names the previous answer: Codex on one WebSocket
   * (`previous_response_id`, `store: false`), an Interactions client `previous_interaction_id`.
   */
  chained?: boolean;
}

const format = (id: string) => TEST_FORMATS.find((f) => f.id === id)!;
export const CLIENTS: Client[] = [
  { name: "chat", format: format("chat") },
  { name: "responses", format: format("responses") },
  { name: "responses-ws", format: format("responses"), ws: true },
  { name: "responses-ws-chained", format: format("responses"), ws: true, chained: true },
  { name: "messages", format: format("messages") },
  { name: "gemini", format: format("generate-content") },
  { name: "interactions", format: format("interactions") },
  { name: "interactions-chained", format: format("interactions"), chained: true },
];

/** The native pair of each family: the client whose format the provider speaks. */
export const NATIVE: Record<string, string> = {
  anthropic: "messages",
  bedrock: "messages",
  vertex: "messages",
  converse: "messages",
  openai: "responses",
  gemini: "gemini",
};

/** The upstream model of each family (the mock reasons, then calls a tool, until a result). */
const MODELS: Record<string, { provider: string; model: string }> = {
  anthropic: { provider: "anthropic", model: "claude-sonnet-4-5-think-tool" },
  pool: { provider: "anthropic-pool", model: "claude-sonnet-4-5-think-tool" },
  bedrock: { provider: "bedrock-claude", model: "anthropic.claude-sonnet-4-5-think-tool-v1:0" },
  converse: {
    provider: "bedrock-converse",
    model: "anthropic.claude-sonnet-4-5-think-tool-v1:0",
  },
  vertex: { provider: "vertex-claude", model: "claude-sonnet-4-5-think-tool@20250929" },
  openai: { provider: "openai", model: "gpt-5-think-tool" },
  gemini: { provider: "gemini", model: "gemini-2.5-pro-think-tool" },
  // A Converse model without prompt caching (Bedrock refuses any cachePoint sent to it).
  llama: { provider: "bedrock-converse", model: "meta.llama3-3-70b-instruct-think-tool-v1:0" },
};

/** Text of about `tokens` tokens (the mock's estimate), distinct per `seed`. */
export function filler(seed: string, tokens: number): string {
  const words: string[] = [];
  let length = 0;
  for (let i = 0; length < tokens * 4; i++) {
    const word = `${seed}${i}`;
    words.push(word);
    length += word.length + 1;
  }
  return words.join(" ");
}

/** The session's tools: five, the mock calling the first. */
function tools(seed: string) {
  return ["get_weather", "read_file", "search_code", "run_tests", "edit_file"].map((name, i) => ({
    name,
    description: filler(`${seed}t${i}`, 600),
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, path: { type: "string" } },
      required: [],
    },
  }));
}

/** Reasoning asked for in each format's own words (the same every turn). */
const REASONING: Record<string, Record<string, unknown>> = {
  chat: { reasoning_effort: "medium" },
  responses: { reasoning: { effort: "medium" } },
  messages: { thinking: { type: "enabled", budget_tokens: 2048 }, max_tokens: 4096 },
  "generate-content": {
    generationConfig: { thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } },
  },
  interactions: { generation_config: { thinking_level: "medium" } },
};

type Body = Record<string, unknown>;

/**
 * Claude Code's breakpoints on a Messages body: its system prompt and the last block of the last
 * message, an hour each; none left on earlier messages (it moves them every turn).
 */
function claudeCodeMarkers(body: Body): Body {
  const hour = { type: "ephemeral", ttl: "1h" };
  const system = (body.system as Body[]).map((b) => ({ ...b, cache_control: hour }));
  const messages = (body.messages as Body[]).map((m, i, all) => {
    const blocks = typeof m.content === "string"
      ? [{ type: "text", text: m.content }]
      : (m.content as Body[]).map(({ cache_control: _, ...b }) => b);
    if (i === all.length - 1) {
      blocks[blocks.length - 1] = { ...blocks.at(-1)!, cache_control: hour };
    }
    return { ...m, content: blocks };
  });
  return { ...body, system, messages };
}

/**
 * A chained request: the whole one's settings, only its last input item (the tool result or the
 * question: what the turn added), and the previous answer's id.
 */
function chained(format: string, whole: Body, previous: string): Body {
  const input = [(whole.input as unknown[]).at(-1)];
  return format === "interactions"
    ? { ...whole, input, previous_interaction_id: previous }
    : { ...whole, input, previous_response_id: previous };
}

/** A replayed session: per request, the usage the client was told and the provider's call. */
export interface Replay {
  client: string;
  target: Target;
  policy: Policy;
  usage: ir.Usage[];
  /** The provider calls the session made, in order. */
  calls: RecordedRequest[];
}

/** The share of input read from the cache over requests 2..N. */
export function readShare(r: Replay): number {
  const later = r.usage.slice(1);
  const input = later.reduce((n, u) => n + u.inputTokens, 0);
  const read = later.reduce((n, u) => n + (u.cacheReadTokens ?? 0), 0);
  return input ? read / input : 0;
}

/** Every provider behind the lab's gateway, caching as its vendor does. */
export interface Lab {
  url: string;
  /** The gateway's access log lines so far. */
  logs: Record<string, unknown>[];
  /** Its metrics, in the Prometheus text format. */
  metrics(): string;
  direct: MockUpstream;
  bedrock: MockUpstream;
  vertex: MockVertex;
  /** The calls a target's provider received so far. */
  calls(target: Target): RecordedRequest[];
  close(): Promise<void>;
}

/**
 * List prices, USD per million tokens, of the lab's upstream models (spend): Claude Sonnet 4.5
 * (5-minute writes), GPT-5, Gemini 2.5 Pro.
 */
export const PRICES = [
  {
    models: ["claude-*", "anthropic.claude-*"],
    input: 3,
    output: 15,
    cache_read: 0.3,
    cache_write: 3.75,
  },
  { models: ["gpt-*", "gemini-*"], input: 1.25, output: 10, cache_read: 0.125 },
];

const POOL = ["sk-pool-key-0001", "sk-pool-key-0002", "sk-pool-key-0003"];

export async function startLab(): Promise<Lab> {
  const caching = new PromptCaches();
  const direct = await startMockUpstream({ caching });
  const bedrock = await startMockBedrock({ caching });
  const vertex = await startMockVertex({ caching });
  const credentials = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(credentials, JSON.stringify(vertex.serviceAccount));
  const key = (name: string, api: string, base: string, api_key = PROVIDER_KEY) => ({
    name,
    api,
    base_url: direct.url + base,
    api_key,
  });
  const routes = [];
  for (const policy of ["auto", "client", "off"] as const) {
    for (const [target, { provider, model }] of Object.entries(MODELS)) {
      routes.push({ models: [`${target}-${policy}`], provider, model, prompt_cache: policy });
    }
    routes.push({
      models: [`pair-${policy}`],
      balance: "weighted",
      prompt_cache: policy,
      targets: ["anthropic-a", "anthropic-b"].map((provider) => ({
        provider,
        model: MODELS.anthropic.model,
      })),
    });
  }
  const gateway = await startPlatformGateway(platformConfig({
    providers: [
      key("anthropic", "messages", ""),
      { ...key("anthropic-pool", "messages", ""), api_key: undefined, api_keys: POOL },
      key("anthropic-a", "messages", "", "sk-account-a-0001"),
      key("anthropic-b", "messages", "", "sk-account-b-0001"),
      key("openai", "responses", "/v1"),
      key("gemini", "generate-content", ""),
      bedrockProvider("bedrock-claude", bedrock.url),
      { ...bedrockProvider("bedrock-converse", bedrock.url), api: "converse" },
      { ...onVertex("vertex-claude", "messages", "us-east5", credentials), base_url: vertex.url },
    ],
    routes,
    prices: PRICES,
  }));
  const mockOf = (target: Target) =>
    target === "bedrock" || target === "converse" || target === "llama"
      ? bedrock
      : target === "vertex"
      ? vertex
      : direct;
  return {
    url: gateway.url,
    logs: gateway.logs,
    metrics: () => gateway.gw.metrics.expose(),
    direct,
    bedrock,
    vertex,
    calls: (target) =>
      mockOf(target).requests.filter((r) => r.method === "POST" && r.path !== "/token"),
    async close() {
      await gateway.close();
      await Promise.all([direct.close(), bedrock.close(), vertex.close()]);
      await Deno.remove(credentials);
    },
  };
}

/** The requests of one session: `turns` (default 12) of a tool loop with reasoning. */
export async function replay(
  lab: Lab,
  client: Client,
  target: Target,
  policy: Policy,
  turns = 12,
): Promise<Replay> {
  const { format } = client;
  const loop = format.loop!;
  const seed = `${client.name}${target}${policy}`;
  const model = `${target}-${policy}`;
  const context = { system: filler(`${seed}s`, 3000), tools: tools(seed) };
  const messages = format.id === "messages";
  // Claude Code names its session in a header; Codex its thread in `prompt_cache_key`.
  const headers: Record<string, string> = messages ? { "x-claude-code-session-id": seed } : {};
  const own = format.id === "responses" ? { prompt_cache_key: `thread-${seed}` } : {};
  let body: Body = {
    ...loop.ask(model, true, "question 1", context),
    ...REASONING[format.id],
    ...own,
  };
  if (client.chained && format.id === "interactions") body.store = true;
  const before = lab.calls(target).length;
  const usage: ir.Usage[] = [];
  const socket = client.ws ? new WsSession(lab.url) : undefined;
  let previous: string | undefined;
  try {
    for (let i = 1; i <= turns; i++) {
      const whole = messages ? claudeCodeMarkers(body) : body;
      const sent = client.chained && previous ? chained(format.id, whole, previous) : whole;
      const { stream: _, ...frame } = sent;
      const { answer, kept } = socket
        ? await socket.turn(format, frame)
        : await turn(format, lab.url, model, true, sent, headers);
      if (!answer.usage) {
        throw new Error(`${client.name} → ${target}: request ${i} reported no usage`);
      }
      usage.push(answer.usage);
      previous = String(kept.id);
      const call = answer.parts.find((p): p is ir.ToolCallPart => p.type === "tool_call");
      body = call
        ? loop.followUp(body, kept, call, `result ${i}: ${filler(`${seed}r${i}`, 150)}`)
        : loop.say(body, kept, `question ${i / 2 + 1}`);
    }
  } finally {
    await socket?.close();
  }
  return { client: client.name, target, policy, usage, calls: lab.calls(target).slice(before) };
}
