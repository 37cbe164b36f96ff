/** A gateway in this process over loopback, configured for platform tests. */
import type { Config } from "../src/config.ts";
import { checkFormats, validateConfig } from "../src/config.ts";
import type { Gateway } from "../src/context.ts";
import type { Formats } from "../src/formats.ts";
import { setAccessLogSink } from "../src/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import { FORMATS, KEY } from "./helpers.ts";

export interface PlatformGateway {
  url: string;
  gw: Gateway;
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** `providers` and `routes` with the test client key and metrics on, validated and checked. */
export function platformConfig(
  doc: { providers: unknown[]; routes: unknown[] },
  formats: Formats = FORMATS,
): Config {
  const config = validateConfig({
    keys: [{ name: "team-a", key: KEY }],
    metrics: { hostname: "127.0.0.1", port: 0 },
    ...doc,
  });
  checkFormats(config, formats);
  return config;
}

export async function startPlatformGateway(
  config: Config,
  formats: Formats = FORMATS,
): Promise<PlatformGateway> {
  const gw = await createGateway(config, formats);
  const logs: Record<string, unknown>[] = [];
  const previous = setAccessLogSink((line) => logs.push(JSON.parse(line)));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, createHandler(gw));
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    gw,
    logs,
    async close() {
      await server.shutdown();
      await gw.providerModels.stop();
      await gw.store.close();
      await gw.limiter.store.close();
      setAccessLogSink(previous);
    },
  };
}

/** The JSON `data:` payloads of an SSE body, parsed (`[DONE]` left out). */
export const sseEvents = (text: string): Record<string, unknown>[] =>
  text.split("\n\n").map((r) => r.slice(r.indexOf("data: ") + 6))
    .filter((d) => d.startsWith("{")).map((d) => JSON.parse(d));
