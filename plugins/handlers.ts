/** Every endpoint's handler; plugins own their formats' paths, src/ops the gateway's own. */
import type { Handler } from "../src/context.ts";
import type { EndpointName } from "../src/endpoints.ts";
import { geminiModels, healthz, models, readyz } from "../src/ops.ts";
import { chatCompletions } from "./chat_completions/endpoints.ts";
import { generateContent } from "./generate_content/endpoints.ts";
import { countTokens, messages } from "./messages/endpoints.ts";
import { compact, responses } from "./responses/endpoints.ts";
import { responsesWebSocket } from "./responses/ws.ts";

export const HANDLERS: Record<EndpointName, Handler> = {
  chat: chatCompletions,
  responses,
  responses_ws: responsesWebSocket,
  responses_compact: compact,
  generate_content: generateContent,
  messages,
  count_tokens: countTokens,
  models,
  gemini_models: geminiModels,
  healthz,
  readyz,
};
