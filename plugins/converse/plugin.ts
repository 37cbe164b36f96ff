/**
 * Amazon Bedrock Converse / ConverseStream: a provider API (docs/providers.md) and the client
 * format of the AWS SDKs' ConverseCommand and ConverseStreamCommand (docs/cloud-clients.md), in
 * Bedrock Runtime's dialect.
 */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { converseCaching } from "./caching.ts";
import { BEDROCK_PATHS, bedrockDialect } from "./dialect.ts";
import { converseCodec } from "./codec.ts";
import { FAMILY } from "./common.ts";
import { bedrockException, modelPattern, unsafeModelName } from "../platforms/bedrock_wire.ts";
import { converse } from "./endpoints.ts";
import { converseFraming } from "./framing.ts";
import { bedrockEmbeddings } from "../platforms/bedrock_embeddings.ts";

export const conversePlugin: FormatPlugin<HandlerContext> = {
  id: "converse",
  family: FAMILY,
  system: "aws.bedrock",
  codec: converseCodec,
  dialect: bedrockDialect,
  paths: BEDROCK_PATHS,
  endpoints: [{
    name: "converse",
    operation: "chat",
    method: "POST",
    pattern: modelPattern("converse", "converse-stream"),
    example: "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse",
    handler: converse,
  }],
  upstream: {
    // Without a platform, the provider key is a Bedrock API key, sent as a Bearer token.
    authorize(req, key) {
      if (key) req.headers.set("authorization", `Bearer ${key}`);
    },
    framing: converseFraming,
    // Bedrock's body: `{"message"}` (or `Message`), the exception in `__type` when it is there.
    readError(body) {
      const message = body.message ?? body.Message;
      const type = typeof body.__type === "string" ? body.__type : "";
      return {
        kind: bedrockException(type)?.kind,
        message: typeof message === "string" ? message : undefined,
      };
    },
    responseHeaders: ["x-amzn-requestid", "x-amzn-errortype"],
    unsafeModel: unsafeModelName,
    promptCache: converseCaching,
  },
  // Bedrock's own API serves its embeddings models through InvokeModel.
  embeddings: bedrockEmbeddings,
};
