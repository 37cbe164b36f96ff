/**
 * A loopback Azure OpenAI resource speaking the v1 API: `POST /openai/v1/chat/completions`,
 * `/openai/v1/responses` and `/openai/v1/embeddings` (the model field names the deployment; `api-version` is ignored as
 * v1 allows). The key travels in `api-key` (or as a Bearer, which v1 accepts too), an Entra ID
 * token as `Authorization: Bearer`; anything else is Azure's 401. As Azure does, chat answers
 * carry `prompt_filter_results`, and a chat stream opens with a chunk holding only them (no
 * choices). Content, scenarios and faults are upstream.ts's.
 */
import { chat } from "./chat.ts";
import { openAiEmbeddingsEndpoint } from "./embeddings.ts";
import { responses } from "./responses.ts";
import {
  bodyStream,
  type Endpoint,
  type MockPlatform,
  type MockUpstream,
  startMockUpstream,
} from "./upstream.ts";
import type { Json, Vendor } from "./vendor.ts";
import { CHAT_SSE, TYPED_SSE, untyped } from "./wire.ts";

export const AZURE_TEST_KEY = "mock0azure0openai0key0000000000000";
export const AZURE_TEST_ENTRA_TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.mock-entra.token";

const SAFE = { filtered: false, severity: "safe" };
const PROMPT_FILTER_RESULTS = [{
  prompt_index: 0,
  content_filter_results: { hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: SAFE },
}];

/** Chat as Azure serves it: content filter results in the JSON and first in the stream. */
const azureChat: Vendor = {
  ...chat,
  json: (reply, body) => ({
    ...(chat.json(reply, body) as Json),
    prompt_filter_results: PROMPT_FILTER_RESULTS,
  }),
  events: (reply, body) => [
    untyped({
      choices: [],
      created: 0,
      id: "",
      model: "",
      object: "",
      prompt_filter_results: PROMPT_FILTER_RESULTS,
    }),
    ...chat.events(reply, body),
  ],
};

const ENDPOINTS: Endpoint[] = [
  { path: /^\/openai\/v1\/chat\/completions$/, vendor: azureChat, framing: bodyStream(CHAT_SSE) },
  { path: /^\/openai\/v1\/responses$/, vendor: responses, framing: bodyStream(TYPED_SSE) },
  openAiEmbeddingsEndpoint(/^\/openai\/v1\/embeddings$/, chat),
];

const DENIED = "Access denied due to invalid subscription key or wrong API endpoint. Make sure " +
  "to provide a valid key for an active subscription and use a correct regional API endpoint " +
  "for your resource.";

export interface AzureOptions {
  apiKey?: string;
  /** The Entra ID access token accepted as `Authorization: Bearer`. */
  entraToken?: string;
}

export function startMockAzure(options: AzureOptions = {}): Promise<MockUpstream> {
  const apiKey = options.apiKey ?? AZURE_TEST_KEY;
  const entraToken = options.entraToken ?? AZURE_TEST_ENTRA_TOKEN;
  const credential = (h: Headers) => h.get("api-key") ?? h.get("authorization") ?? "";
  const platform: MockPlatform = {
    endpoints: ENDPOINTS,
    fallback: chat,
    credential,
    intercept(req) {
      const bearer = req.headers.get("authorization")?.match(/^Bearer (.+)$/)?.[1];
      const accepted = req.headers.get("api-key") === apiKey || bearer === apiKey ||
        bearer === entraToken;
      if (accepted) return undefined;
      return Response.json({ error: { code: "401", message: DENIED } }, { status: 401 });
    },
  };
  return startMockUpstream({ platform });
}
