/**
 * Claude's body on Bedrock (InvokeModel): Anthropic's Messages body with Bedrock's
 * `anthropic_version` and `anthropic_beta`, without `model` and `stream`, which the path names.
 * Read as the Messages body (plugins/platforms/claude_body.ts); everything else is the messages
 * codec's, `api` included: its requests relay to Messages providers.
 */
import type { Codec } from "../../src/kit/codec.ts";
import { messagesCodec } from "../messages/codec.ts";
import { BEDROCK_CLAUDE } from "../platforms/bedrock.ts";
import { fromCloudBody } from "../platforms/claude_body.ts";

export const bedrockMessagesCodec: Codec = {
  ...messagesCodec,
  decodeRequest: (body, model) =>
    messagesCodec.decodeRequest(fromCloudBody(body, { model }, BEDROCK_CLAUDE).body, model),
};
