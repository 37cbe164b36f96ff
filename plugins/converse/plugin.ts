/**
 * Amazon Bedrock Converse / ConverseStream, as a provider API only: no client speaks it to
 * the gateway, so it has no dialect, paths or endpoints (docs/providers.md).
 */
import type { Plugin } from "../../src/context.ts";
import { converseCodec, unsafeModelId } from "./codec.ts";
import { FAMILY } from "./common.ts";
import { readBedrockError } from "../platforms/bedrock_errors.ts";
import { converseFraming } from "./framing.ts";

export const conversePlugin: Plugin = {
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
    readError: readBedrockError,
    responseHeaders: ["x-amzn-requestid"],
    unsafeModel: (model) => {
      const why = unsafeModelId(model);
      return why && `cannot be sent in a Bedrock URL: ${why}`;
    },
  },
};
