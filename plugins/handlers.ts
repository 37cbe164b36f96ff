/** Every endpoint's handler; plugins own their formats' paths, src/ops the gateway's own. */
import type { Handler } from "../src/context.ts";
import type { EndpointName } from "../src/endpoints.ts";
import { geminiModelById, geminiModels, healthz, model, models, readyz } from "../src/ops.ts";
import { chatCompletions } from "./chat_completions/endpoints.ts";
import { generateContent } from "./generate_content/endpoints.ts";
import { countTokens, messages } from "./messages/endpoints.ts";
import { compact, responses } from "./responses/endpoints.ts";
import { deleteResponse, getResponse, listInputItems } from "./responses/state.ts";
import { responsesWebSocket } from "./responses/ws.ts";

export const HANDLERS: Record<EndpointName, Handler> = {
  chat: chatCompletions,
  responses,
  responses_ws: responsesWebSocket,
  responses_compact: compact,
  response_get: getResponse,
  response_delete: deleteResponse,
  response_input_items: listInputItems,
  generate_content: generateContent,
  messages,
  count_tokens: countTokens,
  models,
  model,
  gemini_models: geminiModels,
  gemini_model: geminiModelById,
  healthz,
  readyz,
};
