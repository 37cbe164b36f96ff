/**
 * Bedrock Runtime's Claude operations as a client format (InvokeModel, its stream, CountTokens):
 * clients that call Bedrock (Claude Code with `CLAUDE_CODE_USE_BEDROCK`, the Anthropic Bedrock
 * SDK, the AWS SDKs) aimed at the gateway (docs/cloud-clients.md). Anthropic's Messages wire at
 * Bedrock's addresses, in Bedrock's dialect, spoken by clients only: relayed to Messages
 * providers (on Bedrock itself, its frames as they came, through the aws-bedrock platform) and
 * converted for the others. Converse is the converse plugin's.
 */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { messagesPlugin } from "../messages/plugin.ts";
import { modelPattern } from "../platforms/bedrock_wire.ts";
import { bedrockMessagesCodec } from "./codec.ts";
import { BEDROCK_PATHS, bedrockDialect } from "../converse/dialect.ts";
import { countTokens, invoke } from "./endpoints.ts";

const MODEL = "anthropic.claude-sonnet-4-5-20250929-v1%3A0";

export const bedrockMessagesPlugin: FormatPlugin<HandlerContext> = {
  id: "bedrock-messages",
  family: messagesPlugin.family,
  system: messagesPlugin.system,
  codec: bedrockMessagesCodec,
  dialect: bedrockDialect,
  paths: BEDROCK_PATHS,
  endpoints: [
    {
      name: "bedrock_invoke",
      operation: "chat",
      method: "POST",
      pattern: modelPattern("invoke", "invoke-with-response-stream"),
      example: `/model/${MODEL}/invoke`,
      handler: invoke,
    },
    {
      name: "bedrock_count_tokens",
      operation: "count_tokens",
      unbilled: true,
      method: "POST",
      pattern: modelPattern("count-tokens"),
      example: `/model/${MODEL}/count-tokens`,
      handler: countTokens,
    },
  ],
};
