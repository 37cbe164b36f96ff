/** The OpenAI Responses codec: ingress for Responses clients (Codex, SDKs), upstream for providers. */
import type { Codec } from "../../src/kit/codec.ts";
import { decodeRequest } from "./decode_request.ts";
import { decodeResponse } from "./decode_response.ts";
import { decodeStream } from "./decode_stream.ts";
import { encodeRequest } from "./encode_request.ts";
import { encodeResponse } from "./encode_response.ts";
import { encodeStream } from "./encode_stream.ts";
import { countOf } from "../shared.ts";
import { watch } from "./watch.ts";
import { fromWireUsage } from "./usage.ts";

export const responsesCodec: Codec = {
  api: "responses",
  decodeRequest,
  encodeResponse,
  encodeStream,
  path: () => "/responses",
  encodeRequest,
  decodeResponse,
  usage: (body) => fromWireUsage(body.usage),
  outputCap: (body) => countOf(body.max_output_tokens),
  decodeStream,
  watch,
};
