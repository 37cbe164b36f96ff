/**
 * A gateway in front of every embeddings wire's mock (tests/mock/embeddings.ts): the vendor mock
 * as OpenAI (chat and Responses providers), the Gemini API and Anthropic; the Azure, Vertex and
 * Bedrock mocks (Bedrock signing SigV4 with an `api: messages` provider: a platform serves its
 * own embeddings models whatever the api; and Bedrock's own API as `api: converse` with an API
 * key). One route per wire and model family, named as `WIRES` lists them.
 */
import { AZURE_TEST_KEY, startMockAzure } from "./mock/azure.ts";
import { GEMINI_DIMENSIONS, OPENAI_DIMENSIONS } from "./mock/embeddings.ts";
import { startMockBedrock } from "./mock/bedrock.ts";
import { type MockUpstream, startMockUpstream } from "./mock/upstream.ts";
import { startMockVertex } from "./mock/vertex.ts";
import { type Harness, PROVIDER_KEY } from "./helpers.ts";
import { bedrockProvider, platformConfig, startPlatformGateway } from "./platform_harness.ts";
import { onVertex } from "./vertex_harness.ts";

/** A route to one embeddings wire, as the tests call it. */
export interface WireRoute {
  /** The model clients ask for (the route renames it to `upstream`). */
  model: string;
  provider: string;
  upstream: string;
  /** The mock's vector length when the request names none. */
  native: number;
  /** A size the wire can be asked for, other than `native`. */
  other: number;
  /** Whether the call relays the client's body as is. */
  relayed?: boolean;
}

export const WIRES: WireRoute[] = [
  {
    model: "openai-emb",
    provider: "openai",
    upstream: "text-embedding-3-small",
    native: OPENAI_DIMENSIONS,
    other: 6,
    relayed: true,
  },
  {
    model: "responses-emb",
    provider: "openai-responses",
    upstream: "text-embedding-3-large",
    native: OPENAI_DIMENSIONS,
    other: 5,
    relayed: true,
  },
  {
    model: "azure-emb",
    provider: "azure",
    upstream: "emb-deployment",
    native: OPENAI_DIMENSIONS,
    other: 7,
    relayed: true,
  },
  {
    model: "gemini-emb",
    provider: "gemini",
    upstream: "gemini-embedding-001",
    native: GEMINI_DIMENSIONS,
    other: 4,
  },
  {
    // An Interactions provider is the Gemini API too.
    model: "interactions-emb",
    provider: "gemini-interactions",
    upstream: "text-embedding-004",
    native: GEMINI_DIMENSIONS,
    other: 5,
  },
  {
    model: "vertex-predict",
    provider: "vertex",
    upstream: "text-embedding-005",
    native: GEMINI_DIMENSIONS,
    other: 3,
  },
  {
    model: "vertex-gemini-001",
    provider: "vertex",
    upstream: "gemini-embedding-001",
    native: GEMINI_DIMENSIONS,
    other: 8,
  },
  {
    model: "vertex-content",
    provider: "vertex",
    upstream: "gemini-embedding-2",
    native: GEMINI_DIMENSIONS,
    other: 6,
  },
  {
    model: "bedrock-titan",
    provider: "bedrock",
    upstream: "amazon.titan-embed-text-v2:0",
    native: 1024,
    other: 256,
  },
  {
    // Bedrock's own API with a Bedrock API key (no platform): InvokeModel all the same.
    model: "bedrock-key-titan",
    provider: "bedrock-key",
    upstream: "amazon.titan-embed-text-v2:0",
    native: 1024,
    other: 512,
  },
  {
    model: "bedrock-cohere-v3",
    provider: "bedrock",
    upstream: "cohere.embed-english-v3",
    native: 1024,
    other: 1024,
  },
  {
    model: "bedrock-cohere-v4",
    provider: "bedrock",
    upstream: "us.cohere.embed-v4:0",
    native: 1536,
    other: 512,
  },
];

/** A Bedrock API key the Bedrock mock accepts as a Bearer. */
const BEDROCK_API_KEY = "bedrock-api-key-for-embeddings";

export const wire = (model: string) => WIRES.find((w) => w.model === model)!;

export interface EmbeddingsHarness extends Omit<Harness, "upstream"> {
  /** The vendor mock: OpenAI, the Gemini API, Anthropic. */
  vendor: MockUpstream;
  azure: MockUpstream;
  vertex: MockUpstream;
  bedrock: MockUpstream;
}

/** The gateway of WIRES, plus `claude-emb` (Anthropic: no embeddings) and `demo-*`. */
export async function startEmbeddingsGateway(
  opts: { routes?: Record<string, unknown>[]; tweak?: (doc: Record<string, unknown>) => void } = {},
): Promise<EmbeddingsHarness> {
  const vendor = await startMockUpstream();
  const azure = await startMockAzure();
  const vertex = await startMockVertex();
  const bedrock = await startMockBedrock({ apiKey: BEDROCK_API_KEY });
  const credentials = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(credentials, JSON.stringify(vertex.serviceAccount));
  const keyed = (name: string, api: string, base_url: string) => ({
    name,
    api,
    base_url,
    api_key: PROVIDER_KEY,
  });
  const doc: Record<string, unknown> & { providers: unknown[]; routes: unknown[] } = {
    providers: [
      keyed("openai", "chat", `${vendor.url}/v1`),
      keyed("openai-responses", "responses", `${vendor.url}/v1`),
      keyed("gemini", "generate-content", vendor.url),
      keyed("gemini-interactions", "interactions", vendor.url),
      keyed("anthropic", "messages", vendor.url),
      {
        name: "azure",
        api: "chat",
        platform: "azure-openai",
        base_url: `${azure.url}/openai/v1`,
        api_key: AZURE_TEST_KEY,
      },
      {
        ...onVertex("vertex", "generate-content", "us-central1", credentials),
        base_url: vertex.url,
      },
      bedrockProvider("bedrock", bedrock.url),
      { name: "bedrock-key", api: "converse", base_url: bedrock.url, api_key: BEDROCK_API_KEY },
      { name: "demo", api: "demo" },
    ],
    routes: [
      ...opts.routes ?? [],
      ...WIRES.map((w) => ({ models: [w.model], provider: w.provider, model: w.upstream })),
      { models: ["claude-emb"], provider: "anthropic" },
      { models: ["demo-*"], provider: "demo" },
    ],
  };
  opts.tweak?.(doc);
  const gateway = await startPlatformGateway(platformConfig(doc));
  return {
    ...gateway,
    vendor,
    azure,
    vertex,
    bedrock,
    async close() {
      await gateway.close();
      await Promise.all([vendor.close(), azure.close(), vertex.close(), bedrock.close()]);
      await Deno.remove(credentials);
    },
  };
}

/** The mock that serves `w`'s provider. */
export function mockOf(h: EmbeddingsHarness, w: WireRoute): MockUpstream {
  if (w.provider === "azure") return h.azure;
  if (w.provider === "vertex") return h.vertex;
  if (w.provider.startsWith("bedrock")) return h.bedrock;
  return h.vendor;
}

/** The embeddings calls a mock received (Vertex's token endpoint left out). */
export const embeddingCalls = (m: MockUpstream) =>
  m.requests.filter((r) => /embed|predict|invoke/i.test(r.path));
