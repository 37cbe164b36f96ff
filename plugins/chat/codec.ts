/** OpenAI Chat Completions, as the client's format and as a provider's API. */
import type { Codec } from "../../src/kit/codec.ts";
import { decodeRequest } from "./decode_request.ts";
import { decodeStream } from "./decode_stream.ts";
import { encodeRequest } from "./encode_request.ts";
import { encodeStream } from "./encode_stream.ts";
import { decodeResponse, encodeResponse } from "./response.ts";
import type { ChatUsage } from "./schema.ts";
import { countOf } from "../shared.ts";
import { watch } from "./watch.ts";
import { usageToIr } from "./wire.ts";

export const chatCodec: Codec = {
  api: "chat",
  decodeRequest,
  encodeResponse,
  encodeStream,
  path: () => "/chat/completions",
  encodeRequest,
  decodeResponse,
  usage: ({ json }) => {
    const usage = json.at(-1)?.usage;
    return usage ? usageToIr(usage as ChatUsage) : undefined;
  },
  outputCap: (body) => countOf(body.max_completion_tokens ?? body.max_tokens),
  decodeStream,
  watch,
};
