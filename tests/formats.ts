/**
 * The formats under test, from the plugin registry: each registered plugin with its test-side
 * pieces, found by its id in tests/formats/<id>.ts. Shared test code (the golden runner, the
 * HTTP replay) enumerates these instead of naming formats, so registering a plugin is enough
 * for it to join; a format outside the registry (tests/toy_format/) builds its own
 * `TestFormat` and passes it in. Formats only providers speak are `UPSTREAM_FORMATS`.
 */
import type { HandlerContext } from "../src/kit/handler.ts";
import type { UpstreamFraming } from "../src/kit/framing.ts";
import type { StreamFraming } from "../src/kit/generation.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import type { ClientFormat } from "../src/request/registry.ts";
import { PLUGINS } from "../plugins/mod.ts";
import { loadEventStreams } from "../plugins/platforms/event_stream.ts";

// The harness scans streams synchronously (a client's view of what it read so far); the
// event-stream codec, which the gateway loads on first use, is loaded here once for that.
await loadEventStreams();

/** How a client of the format asks for a generation. */
export interface ClientSide {
  /** The generation path for a model (some formats carry the model and the action in it). */
  path(model: string, stream: boolean): string;
  /** The headers its SDKs send, the key where its dialect reads it. */
  headers(key: string): Record<string, string>;
  /** A minimal request body. */
  body(model: string, stream: boolean): unknown;
  /**
   * A request touching most of the format (system, media, tools, a tool round trip), `model`
   * left out: tests/malformed_input_test.ts puts a value of the wrong shape in each field.
   */
  rich?: Record<string, unknown>;
}

/** What tests need of a format beyond its plugin: tests/formats/<id>.ts exports it as `side`. */
export interface FormatSide {
  /**
   * Appended to a loopback provider's URL to make its `base_url` (`/v1` for OpenAI's); absent
   * for a format only clients speak.
   */
  providerBase?: string;
  client: ClientSide;
  /** Client streams on the wire; default: server-sent events in `.sse` fixtures. */
  streams?: StreamSide;
  /** Its provider in the harness's mock config (tests/helpers.ts); absent: none there. */
  mock?: MockSide;
  /** How its clients run a tool loop (tests/platform_matrix_test.ts). */
  loop?: LoopSide;
}

/** A format's provider and routes in the harness's config, on the mock upstream. */
export interface MockSide {
  /** The provider's name. */
  provider: string;
  /** Its routes (`provider` added): model patterns and their switches. */
  routes: { models: string[]; [setting: string]: unknown }[];
  /** A model whose route relays this format as is (its provider speaks it). */
  relayModel: string;
  /** The body the shared HTTP tests send when it is not `client.body`. */
  body?(model: string, stream: boolean): unknown;
}

type Body = Record<string, unknown>;

/** A function tool as a loop declares it (requests.ts LOOP_TOOL's shape). */
export interface LoopTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** What a loop's conversation starts from besides the question. */
export interface LoopContext {
  /** A system prompt (default: none). */
  system?: string;
  /** The tools declared (default: LOOP_TOOL alone). */
  tools?: LoopTool[];
}

/** A tool loop as a client of the format runs it: ask with LOOP_TOOL (requests.ts), answer the call. */
export interface LoopSide {
  /** The first turn: `question`, LOOP_TOOL declared (`client.path` addresses it). */
  ask(model: string, stream: boolean, question: string, context?: LoopContext): Body;
  /**
   * The next turn: `ask`'s conversation, then the answer (the format's JSON) as the client
   * keeps it, signatures and all, then `result` for `call`.
   */
  followUp(ask: Body, answer: Body, call: { id: string; name: string }, result: string): Body;
  /** The next turn after a text answer: the conversation, the answer as kept, a new question. */
  say(ask: Body, answer: Body, question: string): Body;
  /**
   * The answer a client keeps from its stream, as the format's JSON (its SDK's assembly);
   * default: the format's codec decodes the stream and encodes the answer.
   */
  kept?(events: SseEvent[]): Body;
}

/** A format's streams in fixtures and on the wire. */
export interface WireStreams {
  /** The extension of its stream fixtures (`.sse`). */
  ext: string;
  /**
   * A fixture's bytes on the wire; absent: its text as is. A binary framing (AWS event stream)
   * keeps a readable fixture and frames it here.
   */
  bytes?(fixture: string): Uint8Array;
  /** A stream's bytes as the readable text of its fixtures (`bytes` the other way). */
  text?(bytes: Uint8Array): string;
}

export interface StreamSide extends WireStreams {
  /** Its framing, as the plugin's endpoint declares it; default: server-sent events. */
  framing?: StreamFraming;
  /**
   * How its clients divide the stream into events (a binary one: Bedrock's event stream);
   * default: the plugin's upstream framing, else server-sent events.
   */
  read?(): UpstreamFraming;
}

/** A registered format. */
type Plugin = (typeof PLUGINS)[number];

/** A format that clients speak. */
type FormatPlugin = ClientFormat<HandlerContext>;

/**
 * A format only providers speak (Converse): the golden runner converts every client request to
 * it and its answers to every client. tests/formats/<id>.ts exports its `streams`.
 */
export interface UpstreamFormat {
  id: string;
  plugin: Plugin;
  streams: WireStreams;
}

export interface TestFormat extends FormatSide, UpstreamFormat {
  plugin: FormatPlugin;
  streams: StreamSide;
}

const SSE: StreamSide = { ext: ".sse" };

export function testFormat(plugin: FormatPlugin, side: FormatSide): TestFormat {
  return { ...side, id: plugin.id, plugin, streams: side.streams ?? SSE };
}

/** Each plugin with its side from tests/formats/<id>.ts (missing: an error naming the file). */
export async function testFormats(plugins: readonly FormatPlugin[]): Promise<TestFormat[]> {
  return await Promise.all(plugins.map(async (plugin) => {
    const file = new URL(`./formats/${plugin.id}.ts`, import.meta.url);
    let side: FormatSide;
    try {
      ({ side } = await import(file.href));
    } catch (e) {
      throw new Error(`format ${plugin.id}: no test side in ${file.pathname}`, { cause: e });
    }
    return testFormat(plugin, side);
  }));
}

/**
 * The registered formats that clients speak (plugins/mod.ts), in registry order. Formats only
 * providers speak (Converse) are `UPSTREAM_FORMATS`: the golden runner takes them as targets
 * and sources only, the replay not at all. Formats only clients speak (Vertex AI's, without
 * `upstream`) are clients here and never targets or sources (`speaksUpstream`).
 */
export const TEST_FORMATS: readonly TestFormat[] = await testFormats(
  PLUGINS.filter((p): p is FormatPlugin => p.dialect !== undefined),
);

/** The registered formats that only providers speak, in registry order. */
export const UPSTREAM_FORMATS: readonly UpstreamFormat[] = await Promise.all(
  PLUGINS.filter((p) => p.dialect === undefined).map(async (plugin) => {
    const file = new URL(`./formats/${plugin.id}.ts`, import.meta.url);
    let streams: WireStreams;
    try {
      ({ streams } = await import(file.href));
    } catch (e) {
      throw new Error(`format ${plugin.id}: no streams in ${file.pathname}`, { cause: e });
    }
    return { id: plugin.id, plugin, streams };
  }),
);

/** Whether providers speak `format` (a format only clients speak has no `upstream`). */
export const speaksUpstream = (format: UpstreamFormat): boolean =>
  format.plugin.upstream !== undefined;

/**
 * What a client of `format` has read of a stream so far, as text: the events' data where its
 * stream is binary (`streams.read`: Bedrock's frames, a `chunk`'s base64 unwrapped), else the
 * bytes as UTF-8. Whole events only, for a binary stream (a frame still arriving is not read).
 */
export function streamText(format: TestFormat, bytes: Uint8Array): string {
  const decoder = new TextDecoder();
  const read = format.streams.read?.();
  if (!read) return decoder.decode(bytes);
  return read.scan(bytes, 0, (b) => decoder.decode(b)).events.map((e) => e.data).join("\n");
}
