/**
 * The Bedrock Converse codec (`/model/{modelId}/converse`, `/converse-stream`), as client
 * format (the AWS SDKs' ConverseCommand and ConverseStreamCommand) and as upstream API.
 */
import type { Codec } from "../../src/kit/codec.ts";
import { countOf } from "../shared.ts";
import { modelIdSegment } from "../platforms/bedrock_wire.ts";
import { decodeRequest } from "./decode_request.ts";
import { decodeResponse, encodeResponse, usageOf } from "./response.ts";
import { decodeStream } from "./decode_stream.ts";
import { encodeRequest } from "./encode_request.ts";
import { encodeStream } from "./encode_stream.ts";
import { watch } from "./watch.ts";

/** The operation's path, the model id one percent-encoded segment (or a 400 naming it). */
const conversePath = (model: string, stream: boolean) =>
  `/model/${modelIdSegment(model)}/${stream ? "converse-stream" : "converse"}`;

export const converseCodec: Codec = {
  api: "converse",
  decodeRequest,
  encodeResponse,
  encodeStream,
  path: conversePath,
  encodeRequest,
  decodeResponse,
  usage: ({ json }) => {
    const last = json.at(-1);
    return last && usageOf(last);
  },
  outputCap: (body) => countOf((body.inferenceConfig as { maxTokens?: unknown })?.maxTokens),
  decodeStream,
  watch,
};
