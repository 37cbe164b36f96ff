/**
 * The Gemini Interactions format (`POST /v1beta/interactions`): @google/genai's
 * `client.interactions` as a client, Gemini's Interactions endpoint as an upstream.
 */
import type { Codec } from "../../src/kit/codec.ts";
import { decodeRequest } from "./decode_request.ts";
import { encodeResponse } from "./encode_response.ts";
import { encodeStream } from "./encode_stream.ts";
import { encodeRequest, path } from "./encode_request.ts";
import { decodeResponse } from "./decode_response.ts";
import { decodeStream } from "./decode_stream.ts";
import { decodeUsage } from "./steps.ts";
import { countOf } from "../shared.ts";
import { watch } from "./watch.ts";
import { longDecode } from "./long_decode.ts";

export const interactionsCodec: Codec = {
  api: "interactions",
  decodeRequest,
  encodeResponse,
  encodeStream,
  path,
  encodeRequest,
  decodeResponse,
  // A whole interaction's, or the one `interaction.completed` carries.
  usage: ({ json }) => {
    const last = json.at(-1);
    return decodeUsage(last?.usage ?? (last?.interaction as { usage?: unknown })?.usage);
  },
  outputCap: (body) =>
    countOf(
      (body.generation_config as { max_output_tokens?: unknown } | undefined)?.max_output_tokens,
    ),
  decodeStream,
  watch,
  longDecode,
};
