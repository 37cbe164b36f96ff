/**
 * Claude's body on Vertex (rawPredict): Anthropic's Messages body with Vertex's
 * `anthropic_version` and without `model`, which the path names. Read as the Messages body
 * (plugins/platforms/claude_body.ts); everything else is the messages codec's, `api` included:
 * its requests relay to Messages providers.
 */
import type { Codec } from "../../src/kit/codec.ts";
import { messagesCodec } from "../messages/codec.ts";
import { fromCloudBody } from "../platforms/claude_body.ts";
import { VERTEX_CLAUDE } from "../platforms/vertex_wire.ts";

export const vertexMessagesCodec: Codec = {
  ...messagesCodec,
  decodeRequest: (body, model) =>
    messagesCodec.decodeRequest(fromCloudBody(body, { model }, VERTEX_CLAUDE).body, model),
};
