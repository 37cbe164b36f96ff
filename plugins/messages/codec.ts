/** The Anthropic Messages codec (`/v1/messages`), as client format and as upstream API. */
import type { Codec } from "../../src/kit/codec.ts";
import { decodeRequest } from "./decode_request.ts";
import { encodeRequest } from "./encode_request.ts";
import { decodeResponse, encodeResponse } from "./response.ts";
import { decodeStream } from "./decode_stream.ts";
import { encodeStream } from "./encode_stream.ts";
import { countOf } from "../shared.ts";
import { watch } from "./watch.ts";
import { readUsage } from "./common.ts";

export const messagesCodec: Codec = {
  api: "messages",
  decodeRequest,
  encodeResponse,
  encodeStream,
  // base_url is the site root; the model travels in the body.
  path: () => "/v1/messages",
  encodeRequest,
  decodeResponse,
  usage: readUsage,
  outputCap: (body) => countOf(body.max_tokens),
  decodeStream,
  watch,
};
