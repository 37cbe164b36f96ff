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
import { obj } from "./read.ts";

export const responsesCodec: Codec = {
  api: "responses",
  decodeRequest,
  encodeResponse,
  encodeStream,
  path: () => "/responses",
  encodeRequest,
  decodeResponse,
  // A whole response's, or the one its terminal event (a stream's, a socket's) carries.
  usage: ({ json }) => {
    const last = json.at(-1);
    return last && fromWireUsage(last.usage ?? obj(last.response).usage);
  },
  outputCap: (body) => countOf(body.max_output_tokens),
  decodeStream,
  watch,
};
