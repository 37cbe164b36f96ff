/** Test side of `aws-bedrock`: Claude through InvokeModel, and Converse, on the Bedrock mock. */
import { startMockBedrock } from "../mock/bedrock.ts";
import { signature } from "../mock/scenario.ts";
import { bedrockProvider, inFront } from "../platform_harness.ts";
import type { PlatformSide } from "../platforms.ts";

export const side: PlatformSide = {
  routes: [
    {
      prefix: "bi",
      vendor: "messages",
      path: (m, s) => `/model/${m}/${s ? "invoke-with-response-stream" : "invoke"}`,
      signature: (m) => signature("thinking", m),
    },
    {
      prefix: "bc",
      vendor: "converse",
      path: (m, s) => `/model/${m}/${s ? "converse-stream" : "converse"}`,
      signature: (m) => signature("reasoning", m),
    },
  ],
  async start() {
    const mock = await startMockBedrock();
    return await inFront(mock, {
      providers: [
        bedrockProvider("bedrock-claude", mock.url),
        { ...bedrockProvider("bedrock-converse", mock.url), api: "converse" },
      ],
      routes: [
        { models: ["bi-*"], provider: "bedrock-claude" },
        { models: ["bc-*"], provider: "bedrock-converse" },
      ],
    });
  },
};
