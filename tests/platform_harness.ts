/** A gateway in this process over loopback, configured for platform tests. */
import type { Config } from "../src/config/config.ts";
import { checkFormats, validateConfig } from "../src/config/config.ts";
import type { Formats } from "../src/request/formats.ts";
import { createGateway } from "../src/server.ts";
import { FORMATS, KEY, serveGateway } from "./helpers.ts";
import { BEDROCK_TEST_CREDENTIALS } from "./mock/bedrock.ts";
import type { MockUpstream, RecordedRequest } from "./mock/upstream.ts";

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

/** A gateway served for `config` (see serveGateway). */
export async function startPlatformGateway(config: Config, formats: Formats = FORMATS) {
  return serveGateway(await createGateway(config, formats));
}

/** A Bedrock provider signing with the Bedrock mock's credentials (session token included). */
export function bedrockProvider(name: string, baseUrl: string): Record<string, unknown> {
  const { accessKeyId, secretAccessKey, sessionToken } = BEDROCK_TEST_CREDENTIALS;
  return {
    name,
    api: "messages",
    platform: "aws-bedrock",
    base_url: baseUrl,
    aws: {
      region: "us-east-1",
      access_key_id: accessKeyId,
      secret_access_key: secretAccessKey,
      session_token: sessionToken,
    },
  };
}

/** The JSON `data:` payloads of an SSE body, parsed (`[DONE]` left out). */
export const sseEvents = (text: string): Record<string, unknown>[] =>
  text.split("\n\n").map((r) => r.slice(r.indexOf("data: ") + 6))
    .filter((d) => d.startsWith("{")).map((d) => JSON.parse(d));

/** A gateway in front of a platform mock: its URL, the calls the mock received. */
export interface Served {
  url: string;
  calls(): RecordedRequest[];
  close(): Promise<void>;
}

/** A gateway for `doc` in front of `mock`; closing closes both. */
export async function inFront(
  mock: MockUpstream,
  doc: { providers: unknown[]; routes: unknown[] },
): Promise<Served> {
  const gateway = await startPlatformGateway(platformConfig(doc));
  return {
    url: gateway.url,
    calls: () => mock.requests,
    close: async () => {
      await gateway.close();
      await mock.close();
    },
  };
}
