/**
 * Vertex AI as client formats: clients that call Vertex (the Anthropic Vertex SDK, Claude Code
 * with `CLAUDE_CODE_USE_VERTEX`, `@google/genai` in Vertex mode) aimed at the gateway. Two wires
 * at Vertex's addresses, in Vertex's dialect: Claude's rawPredict (Anthropic's Messages) and
 * Gemini's generateContent. Formats only clients speak: their requests relay to providers of
 * their wire (on Vertex itself, through the gcp-vertex platform) and convert for the others.
 */
import type { EndpointSpec, FormatPlugin } from "../../src/kit/format.ts";
import type { HandlerContext } from "../../src/kit/handler.ts";
import { generateContentCodec } from "../generate-content/codec.ts";
import { generateContentPlugin } from "../generate-content/plugin.ts";
import { messagesPlugin } from "../messages/plugin.ts";
import { vertexMessagesCodec } from "./codec.ts";
import { vertexClaudeDialect, vertexDialect } from "./dialect.ts";
import { countTokens, generateContent, rawPredict } from "./endpoints.ts";
import { vertexModelPath } from "../platforms/vertex_wire.ts";

/** Where Vertex's model paths start: v1 (the Anthropic SDK), v1beta1 (genai); express mode. */
const PATHS = ["/v1/projects/", "/v1beta1/projects/", "/v1/publishers/", "/v1beta1/publishers/"];

const AT = "/v1/projects/my-project/locations";

const claudeEndpoints: EndpointSpec<HandlerContext>[] = [
  {
    name: "vertex_count_tokens",
    operation: "count_tokens",
    unbilled: true,
    method: "POST",
    pattern: vertexModelPath("anthropic", "count-tokens:rawPredict"),
    example: `${AT}/us-east5/publishers/anthropic/models/count-tokens:rawPredict`,
    handler: countTokens,
  },
  {
    name: "vertex_raw_predict",
    operation: "chat",
    method: "POST",
    // Any model and action (the handler checks them) but the token counter's, an endpoint of its own.
    pattern: vertexModelPath("anthropic", "(?!count-tokens:)[^/]+"),
    example:
      `${AT}/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict`,
    handler: rawPredict,
  },
];

export const vertexMessagesPlugin: FormatPlugin<HandlerContext> = {
  id: "vertex-messages",
  family: messagesPlugin.family,
  system: messagesPlugin.system,
  codec: vertexMessagesCodec,
  dialect: vertexClaudeDialect,
  paths: PATHS,
  endpoints: claudeEndpoints,
};

export const vertexGenerateContentPlugin: FormatPlugin<HandlerContext> = {
  id: "vertex-generate-content",
  family: generateContentPlugin.family,
  system: generateContentPlugin.system,
  codec: generateContentCodec,
  dialect: vertexDialect,
  paths: PATHS,
  endpoints: [{
    name: "vertex_generate_content",
    operation: "generate_content",
    method: "POST",
    // Any model and action: the handler checks them.
    pattern: vertexModelPath("google", "[^/]+"),
    example: `${AT}/us-central1/publishers/google/models/gemini-2.5-flash:generateContent`,
    handler: generateContent,
  }],
};
