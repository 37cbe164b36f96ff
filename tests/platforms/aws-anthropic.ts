/** Test side of `aws-anthropic`: Anthropic's Messages API on the Claude Platform on AWS mock. */
import {
  AWS_ANTHROPIC_CREDENTIALS,
  AWS_ANTHROPIC_WORKSPACE,
  startMockAwsAnthropic,
} from "../mock/aws_anthropic.ts";
import { signature } from "../mock/scenario.ts";
import { inFront } from "../platform_harness.ts";
import type { PlatformSide } from "../platforms.ts";

export const side: PlatformSide = {
  routes: [
    {
      prefix: "pa",
      vendor: "messages",
      path: () => "/v1/messages",
      signature: (m) => signature("thinking", m),
    },
  ],
  async start() {
    const mock = await startMockAwsAnthropic();
    const { accessKeyId, secretAccessKey } = AWS_ANTHROPIC_CREDENTIALS;
    return await inFront(mock, {
      providers: [{
        name: "claude-on-aws",
        api: "messages",
        platform: "aws-anthropic",
        base_url: mock.url,
        aws: {
          region: "us-east-1",
          workspace_id: AWS_ANTHROPIC_WORKSPACE,
          access_key_id: accessKeyId,
          secret_access_key: secretAccessKey,
        },
      }],
      routes: [{ models: ["pa-*"], provider: "claude-on-aws" }],
    });
  },
};
