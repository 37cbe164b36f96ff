/**
 * Chat Completions bodies: the client request (checked on every request, passthrough included)
 * and the upstream response and stream chunk (checked before decoding). Objects are loose so
 * new fields pass; `type` tags are open so new part and tool types pass on passthrough routes
 * (the converting decoder rejects the ones it cannot express); known variants are strict.
 */
import { z } from "zod";
import { parseBody, sparseObject, tagged } from "../../src/kit/validate.ts";

type Loose = z.ZodType<{ type: string } & Record<string, unknown>>;

const stringOr = <T extends z.ZodType>(other: T) => z.union([z.string(), other]);
const jsonObject = z.record(z.string(), z.unknown());
/** Chat's cache marker on content parts (new, gpt-5.6+). */
const cacheBreakpoint = z.looseObject({ mode: z.string() }).nullish();

export const textPart = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  prompt_cache_breakpoint: cacheBreakpoint,
});
export const imagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({ url: z.string(), detail: z.string().nullish() }),
  prompt_cache_breakpoint: cacheBreakpoint,
});
export const audioPart = z.looseObject({
  type: z.literal("input_audio"),
  input_audio: z.looseObject({ data: z.string(), format: z.string() }),
});
export const filePart = z.looseObject({
  type: z.literal("file"),
  file: z.looseObject({
    file_data: z.string().nullish(),
    file_id: z.string().nullish(),
    filename: z.string().nullish(),
  }),
  prompt_cache_breakpoint: cacheBreakpoint,
});
export const refusalPart = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });

const userPart = tagged(() => ({
  text: textPart,
  image_url: imagePart,
  input_audio: audioPart,
  file: filePart,
}));
const assistantPart = tagged(() => ({ text: textPart, refusal: refusalPart }));
const textOnlyPart = tagged(() => ({ text: textPart }));

/** Gemini's OpenAI-compatible carrier for thought signatures on tool calls. */
const extraContent = z.looseObject({
  google: z.looseObject({ thought_signature: z.string().nullish() }).nullish(),
}).nullish();

export const functionCall = z.looseObject({
  type: z.literal("function"),
  id: z.string(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
  extra_content: extraContent,
});
export const customCall = z.looseObject({
  type: z.literal("custom"),
  id: z.string(),
  custom: z.looseObject({ name: z.string(), input: z.string() }),
  extra_content: extraContent,
});
const toolCall = tagged(() => ({ function: functionCall, custom: customCall }));

/** LiteLLM's `thinking_blocks` convention for Anthropic thinking (signatures included). */
export const thinkingBlock = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string().nullish(),
});
export const redactedThinkingBlock = z.looseObject({
  type: z.literal("redacted_thinking"),
  data: z.string(),
});
const thinkingBlocks = z.array(
  tagged(() => ({ thinking: thinkingBlock, redacted_thinking: redactedThinkingBlock })),
);

const name = z.string().nullish();
const systemMessage = z.looseObject({
  role: z.enum(["system", "developer"]),
  content: stringOr(z.array(textOnlyPart)),
  name,
});
const userMessage = z.looseObject({
  role: z.literal("user"),
  content: stringOr(z.array(userPart)),
  name,
});
const assistantMessage = z.looseObject({
  role: z.literal("assistant"),
  content: stringOr(z.array(assistantPart)).nullish(),
  refusal: z.string().nullish(),
  tool_calls: z.array(toolCall).nullish(),
  reasoning_content: z.string().nullish(),
  thinking_blocks: thinkingBlocks.nullish(),
  audio: z.looseObject({ id: z.string() }).nullish(),
  name,
});
const toolMessage = z.looseObject({
  role: z.literal("tool"),
  content: stringOr(z.array(textOnlyPart)),
  tool_call_id: z.string(),
});
/** Deprecated; validated so passthrough works, rejected on converted routes. */
const functionMessage = z.looseObject({
  role: z.literal("function"),
  content: z.string().nullable(),
  name: z.string(),
});
const message = z.discriminatedUnion("role", [
  systemMessage,
  userMessage,
  assistantMessage,
  toolMessage,
  functionMessage,
]);

export const functionTool = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({
    name: z.string(),
    description: z.string().nullish(),
    parameters: jsonObject.nullish(),
    strict: z.boolean().nullish(),
  }),
});
export const customTool = z.looseObject({
  type: z.literal("custom"),
  custom: z.looseObject({
    name: z.string(),
    description: z.string().nullish(),
    format: z.looseObject({ type: z.string() }).nullish(),
  }),
});
const tool = tagged(() => ({ function: functionTool, custom: customTool }));

const namedTool = z.looseObject({ name: z.string() });
export const allowedTools = z.looseObject({
  type: z.literal("allowed_tools"),
  allowed_tools: z.looseObject({
    mode: z.enum(["auto", "required"]),
    tools: z.array(z.looseObject({
      type: z.string(),
      function: namedTool.nullish(),
      custom: namedTool.nullish(),
    })),
  }),
});
const toolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  tagged(() => ({
    function: z.looseObject({ function: namedTool }),
    custom: z.looseObject({ custom: namedTool }),
    allowed_tools: allowedTools,
  })),
]);

export const jsonSchemaFormat = z.looseObject({
  type: z.literal("json_schema"),
  json_schema: z.looseObject({
    name: z.string(),
    description: z.string().nullish(),
    schema: jsonObject.nullish(),
    strict: z.boolean().nullish(),
  }),
});
const responseFormat = tagged(() => ({ json_schema: jsonSchemaFormat }));

const int = z.number().int().nullish();
const num = z.number().nullish();

const requestSchema = sparseObject({
  model: z.string(),
  messages: z.array(message),
}, {
  tools: z.array(tool).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  reasoning_effort: z.string().nullish(),
  max_completion_tokens: int,
  max_tokens: int,
  temperature: num,
  top_p: num,
  stop: stringOr(z.array(z.string())).nullish(),
  n: int,
  seed: int,
  presence_penalty: num,
  frequency_penalty: num,
  logit_bias: z.record(z.string(), z.number()).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: int,
  response_format: responseFormat.nullish(),
  verbosity: z.string().nullish(),
  modalities: z.array(z.string()).nullish(),
  audio: jsonObject.nullish(),
  web_search_options: jsonObject.nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  functions: z.array(z.unknown()).nullish(),
  function_call: z.unknown().optional(),
});

export type ChatRequest = z.infer<typeof requestSchema>;
export type ChatMessage = z.infer<typeof message>;
export type AssistantMessage = z.infer<typeof assistantMessage>;
export type ChatTool = z.infer<typeof tool>;
export type ToolChoice = z.infer<typeof toolChoice>;

// ---- upstream bodies ----

const usageSchema = z.looseObject({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  prompt_tokens_details: z.looseObject({
    cached_tokens: int,
    cache_write_tokens: int,
  }).nullish(),
  completion_tokens_details: z.looseObject({ reasoning_tokens: int }).nullish(),
});
export type ChatUsage = z.infer<typeof usageSchema>;

/** Non-standard reasoning text (DeepSeek, vLLM, CLIProxyAPI): `reasoning_content` or `reasoning`. */
const reasoningText = {
  reasoning_content: z.string().nullish(),
  reasoning: z.unknown().optional(),
};

export const responseSchema = z.looseObject({
  id: z.string().nullish(),
  created: z.number().nullish(),
  model: z.string().nullish(),
  choices: z.array(z.looseObject({
    finish_reason: z.string().nullish(),
    message: z.looseObject({
      content: stringOr(z.array(assistantPart)).nullish(),
      refusal: z.string().nullish(),
      tool_calls: z.array(toolCall).nullish(),
      ...reasoningText,
    }),
  })),
  usage: usageSchema.nullish(),
});
export type ChatResponse = z.infer<typeof responseSchema>;

const toolCallDelta = z.looseObject({
  index: z.number().int().nullish(),
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.looseObject({ name: z.string().nullish(), arguments: z.string().nullish() })
    .nullish(),
  custom: z.looseObject({ name: z.string().nullish(), input: z.string().nullish() }).nullish(),
  extra_content: extraContent,
});
export type ToolCallDelta = z.infer<typeof toolCallDelta>;

export const chunkSchema = z.looseObject({
  id: z.string().nullish(),
  created: z.number().nullish(),
  model: z.string().nullish(),
  choices: z.array(z.looseObject({
    index: z.number().int().nullish(),
    finish_reason: z.string().nullish(),
    delta: z.looseObject({
      content: z.string().nullish(),
      refusal: z.string().nullish(),
      tool_calls: z.array(toolCallDelta).nullish(),
      ...reasoningText,
    }).nullish(),
  })).nullish(),
  usage: usageSchema.nullish(),
});
export type ChatChunk = z.infer<typeof chunkSchema>;

/** Parses a client body; throws a 400 naming the first bad field (e.g. `messages[2].content`). */
export function parseRequest(body: unknown): ChatRequest {
  return parseBody(requestSchema, body);
}
