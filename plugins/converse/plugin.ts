/**
 * Amazon Bedrock Converse / ConverseStream, as a provider API only: no client speaks it to
 * the gateway, so it has no dialect, paths or endpoints (docs/providers.md).
 */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { converseCaching } from "./caching.ts";
import { converseCodec } from "./codec.ts";
import { FAMILY } from "./common.ts";
import { bedrockException, unsafeModelName } from "../platforms/bedrock_wire.ts";
import { converseFraming } from "./framing.ts";
import { bedrockEmbeddings } from "../platforms/bedrock_embeddings.ts";

export const conversePlugin: FormatPlugin<HandlerContext> = {
  id: "converse",
  family: FAMILY,
  system: "aws.bedrock",
  codec: converseCodec,
  paths: [],
  endpoints: [],
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
    responseHeaders: ["x-amzn-requestid"],
    unsafeModel: unsafeModelName,
    promptCache: converseCaching,
  },
  // Bedrock's own API serves its embeddings models through InvokeModel.
  embeddings: bedrockEmbeddings,
};
