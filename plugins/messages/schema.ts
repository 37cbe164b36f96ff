/**
 * The Anthropic Messages request body as clients send it. Objects are loose (new fields pass)
 * and discriminators are plain strings (new block, tool and source types pass, which keeps
 * passthrough routes working); the known variants are checked field by field.
 */
import { z } from "zod";
import { parseBody, sparseObject, tagged } from "../../src/kit/validate.ts";

type Schema = z.ZodType<Record<string, unknown>>;

const cacheControl = z.looseObject({ type: z.string(), ttl: z.string().optional() }).nullish();
const jsonObject = z.record(z.string(), z.unknown());
const stringOrArray = { error: "expected string or array" };

export const textBlock = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  cache_control: cacheControl,
  citations: z.array(z.unknown()).nullish(),
});

const mediaSource = tagged(() => ({
  base64: z.looseObject({ media_type: z.string(), data: z.string() }),
  text: z.looseObject({ media_type: z.string().optional(), data: z.string() }),
  url: z.looseObject({ url: z.string() }),
  file: z.looseObject({ file_id: z.string() }),
  content: z.looseObject({ content: z.union([z.string(), z.array(z.unknown())], stringOrArray) }),
}));

export const imageBlock = z.looseObject({
  type: z.literal("image"),
  source: mediaSource,
  cache_control: cacheControl,
});

export const documentBlock = z.looseObject({
  type: z.literal("document"),
  source: mediaSource,
  title: z.string().nullish(),
  context: z.string().nullish(),
  cache_control: cacheControl,
});

export const toolUseBlock = z.looseObject({
  type: z.literal("tool_use"),
  id: z.string(),
  name: z.string(),
  input: jsonObject,
  cache_control: cacheControl,
});

export const thinkingBlock = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string(),
});

export const redactedThinkingBlock = z.looseObject({
  type: z.literal("redacted_thinking"),
  data: z.string(),
});

export const midConversationSystemBlock = z.looseObject({
  type: z.literal("mid_conv_system"),
  content: z.union([z.string(), z.array(textBlock)], stringOrArray),
  cache_control: cacheControl,
});

/** A content block: known types are checked, others (server-tool blocks, new ones) pass. */
const contentBlock: z.ZodType<{ type: string } & Record<string, unknown>> = tagged(() => ({
  text: textBlock,
  image: imageBlock,
  document: documentBlock,
  tool_use: toolUseBlock,
  tool_result: toolResultBlock,
  thinking: thinkingBlock,
  redacted_thinking: redactedThinkingBlock,
  mid_conv_system: midConversationSystemBlock,
}));

export const toolResultBlock = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(contentBlock)], stringOrArray).optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});

const content = z.union([z.string(), z.array(contentBlock)], stringOrArray);

const messageParam = z.looseObject({ role: z.string(), content });

/** Custom tools have no `type` (or `"custom"`); server tools carry a versioned `type`. */
const toolParam = z.looseObject({
  type: z.string().nullish(),
  name: z.string(),
  description: z.string().optional(),
  input_schema: jsonObject.optional(),
  strict: z.boolean().optional(),
  eager_input_streaming: z.boolean().nullish(),
  input_examples: z.array(jsonObject).optional(),
  cache_control: cacheControl,
});

const toolChoiceParam = z.looseObject({
  type: z.string(),
  name: z.string().optional(),
  disable_parallel_tool_use: z.boolean().optional(),
});

const thinkingParam = z.looseObject({
  type: z.string(),
  budget_tokens: z.number().int().optional(),
  display: z.string().nullish(),
});

const outputConfigParam = z.looseObject({
  effort: z.string().nullish(),
  format: z.looseObject({ type: z.string(), schema: jsonObject.optional() }).nullish(),
});

const requestSchema = sparseObject({
  model: z.string(),
  max_tokens: z.number().int().nonnegative(),
  messages: z.array(messageParam),
}, {
  system: z.union([z.string(), z.array(textBlock)], stringOrArray).optional(),
  tools: z.array(toolParam).optional(),
  tool_choice: toolChoiceParam.optional(),
  thinking: thinkingParam.optional(),
  output_config: outputConfigParam.optional(),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  top_k: z.number().int().optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  metadata: z.looseObject({ user_id: z.string().nullish() }).optional(),
  cache_control: cacheControl,
  service_tier: z.string().optional(),
  container: z.string().nullish(),
  inference_geo: z.string().nullish(),
  mcp_servers: z.array(z.unknown()).optional(),
});

export type MessagesRequest = z.infer<typeof requestSchema>;

/** Parses a client body; throws a 400 naming the first bad field (e.g. `messages[2].content`). */
export function parseRequest(body: unknown): MessagesRequest {
  return parseBody(requestSchema, body);
}

export function validateRequest(body: unknown): Record<string, unknown> {
  return parseRequest(body);
}
