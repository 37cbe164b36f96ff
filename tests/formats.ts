/**
 * The formats under test, from the plugin registry: each registered plugin with its test-side
 * pieces, found by its id in tests/formats/<id>.ts. Shared test code (the golden runner, the
 * HTTP replay) enumerates these instead of naming formats, so registering a plugin is enough
 * for it to join; a format outside the registry (tests/toy_format/) builds its own
 * `TestFormat` and passes it in.
 */
import type { RequestContext } from "../src/context.ts";
import type { StreamFraming } from "../src/contract/generation.ts";
import type { ClientFormat } from "../src/registry.ts";
import { PLUGINS } from "../plugins/mod.ts";

/** How a client of the format asks for a generation. */
export interface ClientSide {
  /** The generation path for a model (some formats carry the model and the action in it). */
  path(model: string, stream: boolean): string;
  /** The headers its SDKs send, the key where its dialect reads it. */
  headers(key: string): Record<string, string>;
  /** A minimal request body. */
  body(model: string, stream: boolean): unknown;
}

/** What tests need of a format beyond its plugin: tests/formats/<id>.ts exports it as `side`. */
export interface FormatSide {
  /** Appended to a loopback provider's URL to make its `base_url` (`/v1` for OpenAI's). */
  providerBase: string;
  client: ClientSide;
  /** Client streams on the wire; default: server-sent events in `.sse` fixtures. */
  streams?: StreamSide;
  /** Its provider in the harness's mock config (tests/helpers.ts); absent: none there. */
  mock?: MockSide;
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

export interface StreamSide {
  /** The extension of its stream fixtures (`.sse`). */
  ext: string;
  /** Its framing, as the plugin's endpoint declares it; default: server-sent events. */
  framing?: StreamFraming;
}

/** A format that clients speak. */
type FormatPlugin = ClientFormat<RequestContext>;

export interface TestFormat extends FormatSide {
  id: string;
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
 * providers speak (Converse) are left out: the golden pairs and the replay run each format as
 * a client too.
 */
export const TEST_FORMATS: readonly TestFormat[] = await testFormats(
  PLUGINS.filter((p): p is FormatPlugin => p.dialect !== undefined),
);
