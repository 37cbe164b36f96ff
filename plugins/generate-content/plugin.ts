/** Gemini generateContent (`/v1beta/models/{model}:…`): Gemini CLI and @google/genai. */
import type { FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import type { OutgoingRequest } from "../../src/kit/format.ts";
import { unsafeSegmentReason } from "../../src/kit/model_segment.ts";
import { generateContentCodec } from "./codec.ts";
import { geminiModelPage, geminiModels, googleDialect } from "./dialect.ts";
import { generateContent } from "./endpoints.ts";

/** Google's key header (never `?key=`): Interactions providers are authorised alike. */
export function googleAuthorize(req: OutgoingRequest, key: string | undefined) {
  if (key) req.headers.set("x-goog-api-key", key);
}

export const generateContentPlugin: FormatPlugin<HandlerContext> = {
  id: "generate-content",
  family: "gemini",
  system: "gcp.gemini",
  codec: generateContentCodec,
  dialect: googleDialect,
  paths: ["/v1beta/"],
  endpoints: [
    {
      name: "generate_content",
      operation: "generate_content",
      method: "POST",
      // The model and action are validated by the handler so bad ones get a Google-style 400.
      pattern: /^\/v1beta\/models\/[^/]+$/,
      example: "/v1beta/models/gemini-2.5-flash:generateContent",
      handler: generateContent,
    },
  ],
  upstream: {
    authorize: googleAuthorize,
    forwardHeaders: ["x-goog-api-client"],
    models: { path: "/v1beta/models?pageSize=1000", page: geminiModelPage },
    // The model is a segment of the upstream URL.
    unsafeModel: (model) => {
      const why = unsafeSegmentReason(model, true);
      return why && `cannot be sent in a Gemini URL: ${why}`;
    },
  },
  models: geminiModels,
  defaultVendor: {
    env: "GEMINI",
    name: "gemini",
    base_url: "https://generativelanguage.googleapis.com",
    models: ["gemini-*"],
  },
};
