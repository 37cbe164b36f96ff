/** Test side of `azure-openai`: chat and Responses on the Azure mock. */
import { AZURE_TEST_KEY, startMockAzure } from "../mock/azure.ts";
import { signature } from "../mock/scenario.ts";
import { inFront } from "../platform_harness.ts";
import type { PlatformSide } from "../platforms.ts";

export const side: PlatformSide = {
  routes: [
    { prefix: "ac", vendor: "chat", path: () => "/openai/v1/chat/completions" },
    {
      prefix: "ar",
      vendor: "responses",
      path: () => "/openai/v1/responses",
      signature: (m) => signature("reasoning", m),
    },
  ],
  async start() {
    const mock = await startMockAzure();
    const base_url = `${mock.url}/openai/v1`;
    const azure = (name: string, api: string) => ({
      name,
      api,
      platform: "azure-openai",
      base_url,
      api_key: AZURE_TEST_KEY,
    });
    return await inFront(mock, {
      providers: [azure("az-chat", "chat"), azure("az-resp", "responses")],
      routes: [
        { models: ["ac-*"], provider: "az-chat" },
        // As Codex users set it, so that `previous_response_id` reaches Azure over HTTP.
        { models: ["ar-*"], provider: "az-resp", passthrough: true },
      ],
    });
  },
};
