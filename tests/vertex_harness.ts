/**
 * A gateway in front of the Vertex mock (tests/mock/vertex.ts) and, for failover, the vendor mock
 * as Anthropic's own API: Vertex Gemini and Vertex Claude providers from one service-account file.
 */
import type { Config } from "../src/config/config.ts";
import { type Harness, PROVIDER_KEY } from "./helpers.ts";
import { type MockUpstream, type RecordedRequest, startMockUpstream } from "./mock/upstream.ts";
import { type MockVertex, startMockVertex } from "./mock/vertex.ts";
import { platformConfig, startPlatformGateway } from "./platform_harness.ts";

export const PROJECT = "mock-project";
export const GEMINI_AT = `/v1/projects/${PROJECT}/locations/us-central1/publishers/google/models`;
export const CLAUDE_AT = `/v1/projects/${PROJECT}/locations/us-east5/publishers/anthropic/models`;

export interface VertexHarness extends Omit<Harness, "upstream"> {
  vertex: MockVertex;
  /** Anthropic's own API (for failover). */
  direct: MockUpstream;
  /** The service-account file both Vertex providers name. */
  credentials: string;
  /** The config, validated again (what a reload loads). */
  config(): Config;
}

/** A provider on Vertex, its service account in `credentials`. */
export const onVertex = (name: string, api: string, location: string, credentials: string) => ({
  name,
  api,
  platform: "gcp-vertex",
  gcp: { project: PROJECT, location, credentials_file: credentials },
});

/**
 * A gateway whose `vg-*` models go to Vertex Gemini and `vc-*` to Vertex Claude (both from one
 * service-account file; `privateKey` replaces its key), after `routes`; `fo-sig` tries Anthropic
 * (down), then Vertex Gemini, then Vertex Claude. `providers` are configured after those three.
 */
export async function startVertexGateway(
  opts: {
    expiresIn?: number;
    privateKey?: string;
    providers?: Record<string, unknown>[];
    routes?: Record<string, unknown>[];
  } = {},
): Promise<VertexHarness> {
  const vertex = await startMockVertex({ expiresIn: opts.expiresIn });
  const direct = await startMockUpstream();
  const credentials = await Deno.makeTempFile({ suffix: ".json" });
  const privateKey = opts.privateKey ?? vertex.serviceAccount.private_key;
  const account = { ...vertex.serviceAccount, private_key: privateKey };
  await Deno.writeTextFile(credentials, JSON.stringify(account));
  const base_url = vertex.url;
  // Validated anew (the key file read again) at each call, as a reload does.
  const config = () =>
    platformConfig({
      providers: [
        { ...onVertex("vertex-gemini", "generate-content", "us-central1", credentials), base_url },
        { ...onVertex("vertex-claude", "messages", "us-east5", credentials), base_url },
        { name: "anthropic", api: "messages", base_url: direct.url, api_key: PROVIDER_KEY },
        ...opts.providers ?? [],
      ],
      routes: [
        ...opts.routes ?? [],
        { models: ["vg-*"], provider: "vertex-gemini" },
        { models: ["vc-*"], provider: "vertex-claude" },
        {
          models: ["fo-sig"],
          targets: [
            { provider: "anthropic", model: "msg-err529" },
            { provider: "vertex-gemini", model: "vg-text" },
            { provider: "vertex-claude", model: "claude-text@20250929" },
          ],
        },
      ],
    });
  const gateway = await startPlatformGateway(config());
  return {
    ...gateway,
    vertex,
    direct,
    credentials,
    config,
    async close() {
      await gateway.close();
      await vertex.close();
      await direct.close();
      await Deno.remove(credentials);
    },
  };
}

/** The requests Vertex's model endpoints received (the token endpoint's left out). */
export const modelCalls = (vertex: MockVertex): RecordedRequest[] =>
  vertex.requests.filter((r) => r.path !== "/token");
