/**
 * The Gemini generateContent format (`/v1beta/models/{model}:generateContent`): Gemini CLI and
 * @google/genai as clients, the Gemini API as an upstream.
 */
import type { Codec } from "../../src/kit/codec.ts";
import { decodeResponse, encodeResponse } from "./response.ts";
import { decodeRequest } from "./ingress.ts";
import { decodeStream, encodeStream } from "./stream.ts";
import { encodeRequest, path } from "./upstream.ts";
import { countOf } from "../shared.ts";
import { watch } from "./watch.ts";
import { decodeUsage } from "./chunks.ts";
import { longDecode } from "./long_decode.ts";

export const generateContentCodec: Codec = {
  api: "generate-content",
  decodeRequest,
  encodeResponse,
  encodeStream,
  path,
  encodeRequest,
  decodeResponse,
  usage: ({ json }) => decodeUsage(json.at(-1)?.usageMetadata),
  outputCap: (body) =>
    countOf((body.generationConfig as { maxOutputTokens?: unknown } | undefined)?.maxOutputTokens),
  decodeStream,
  watch,
  longDecode,
};
