/**
 * The formats this gateway serves, in the order the core consults them (the first one's
 * dialect answers paths no format claims; Converse is spoken by providers only, Vertex AI's
 * formats by clients only). `main.ts`
 * hands them to the core.
 */
import type { FormatPlugin } from "../src/kit/format.ts";
import type { HandlerContext } from "../src/kit/handler.ts";
import { chatPlugin } from "./chat/plugin.ts";
import { conversePlugin } from "./converse/plugin.ts";
import { generateContentPlugin } from "./generate-content/plugin.ts";
import { interactionsPlugin } from "./interactions/plugin.ts";
import { messagesPlugin } from "./messages/plugin.ts";
import { responsesPlugin } from "./responses/plugin.ts";
import { vertexGenerateContentPlugin, vertexMessagesPlugin } from "./vertex/plugin.ts";

export const PLUGINS: readonly FormatPlugin<HandlerContext>[] = [
  chatPlugin,
  responsesPlugin,
  messagesPlugin,
  generateContentPlugin,
  interactionsPlugin,
  vertexMessagesPlugin,
  vertexGenerateContentPlugin,
  conversePlugin,
];
