/** Every wire format the gateway speaks, by the provider API name it answers to. */
import type { Codec } from "../src/codec.ts";
import type { Api } from "../src/ir.ts";
import { chatCodec } from "./chat_completions/codec.ts";
import { responsesCodec } from "./responses/codec.ts";
import { messagesCodec } from "./messages/codec.ts";
import { geminiCodec } from "./generate_content/codec.ts";

export const CODECS: Record<Api, Codec> = {
  chat: chatCodec,
  responses: responsesCodec,
  messages: messagesCodec,
  "generate-content": geminiCodec,
};
