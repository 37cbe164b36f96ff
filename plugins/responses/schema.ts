/**
 * The Responses request body as clients send it (the HTTP body, or a WebSocket
 * `response.create` frame without its `type`). Strict about the types of the fields the
 * gateway reads, loose about everything else so new and vendor fields (e.g. Codex's
 * `internal_chat_message_metadata_passthrough`) pass through to passthrough routes untouched.
 */
import { z } from "zod";
import { parseBody, sparseObject, tagged } from "../../src/kit/validate.ts";

const str = z.string();
const optStr = z.string().nullish();
const jsonObject = z.record(z.string(), z.unknown());

export const textPart = z.looseObject({ text: str });
export const refusalPart = z.looseObject({ refusal: str });
export const imagePart = z.looseObject({ image_url: optStr, file_id: optStr, detail: optStr });
export const filePart = z.looseObject({
  file_id: optStr,
  file_data: optStr,
  file_url: optStr,
  filename: optStr,
});
const contentPart = tagged(() => ({
  input_text: textPart,
  output_text: textPart,
  refusal: refusalPart,
  input_image: imagePart,
  input_file: filePart,
}));
/** Message content and tool output: a string or content parts. */
const content = z.union([str, z.array(contentPart)]);

export const functionTool = z.looseObject({
  name: str,
  description: optStr,
  parameters: jsonObject.nullish(),
  strict: z.boolean().nullish(),
});
export const customTool = z.looseObject({
  name: str,
  description: optStr,
  format: z.looseObject({ type: str, syntax: optStr, definition: optStr }).nullish(),
});
export const namespaceTool = z.looseObject({
  name: str,
  description: optStr,
  tools: z.array(tagged(() => ({ function: functionTool, custom: customTool }))),
});
const tool = tagged(() => ({
  function: functionTool,
  custom: customTool,
  namespace: namespaceTool,
}));

export const messageItem = z.looseObject({
  role: z.enum(["user", "assistant", "system", "developer"]),
  content,
});
export const functionCallItem = z.looseObject({
  call_id: str,
  name: str,
  arguments: str,
  namespace: optStr,
});
export const customToolCallItem = z.looseObject({
  call_id: str,
  name: str,
  input: str,
  namespace: optStr,
});
export const toolOutputItem = z.looseObject({ call_id: str, output: content });
export const reasoningItem = z.looseObject({
  summary: z.array(textPart).optional(),
  content: z.array(textPart).nullish(),
  encrypted_content: optStr,
});
export const compactionItem = z.looseObject({ encrypted_content: str });
export const additionalToolsItem = z.looseObject({ tools: z.array(tool) });

/** Input items; a `{role, content}` object without `type` is a message. */
const inputItem = tagged(() => ({
  message: messageItem,
  function_call: functionCallItem,
  custom_tool_call: customToolCallItem,
  function_call_output: toolOutputItem,
  custom_tool_call_output: toolOutputItem,
  reasoning: reasoningItem,
  compaction: compactionItem,
  compaction_summary: compactionItem,
  additional_tools: additionalToolsItem,
}), "message");

export const namedChoice = z.looseObject({ name: str });
export const allowedTools = z.looseObject({
  mode: z.enum(["auto", "required"]),
  tools: z.array(z.looseObject({ type: str, name: optStr })),
});
const toolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  tagged(() => ({
    function: namedChoice,
    custom: namedChoice,
    allowed_tools: allowedTools,
  })),
]);

export const jsonSchemaFormat = z.looseObject({
  name: str,
  schema: jsonObject,
  strict: z.boolean().nullish(),
  description: optStr,
});

const requestSchema = sparseObject({}, {
  model: str.optional(),
  input: z.union([str, z.array(inputItem)]).optional(),
  instructions: optStr,
  tools: z.array(tool).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  reasoning: z.looseObject({ effort: optStr, summary: optStr, generate_summary: optStr })
    .nullish(),
  max_output_tokens: z.int().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  presence_penalty: z.number().nullish(),
  frequency_penalty: z.number().nullish(),
  top_logprobs: z.int().nullish(),
  max_tool_calls: z.int().nullish(),
  truncation: z.enum(["auto", "disabled"]).nullish(),
  service_tier: optStr,
  prompt_cache_key: optStr,
  text: z.looseObject({
    format: tagged(() => ({ json_schema: jsonSchemaFormat })).nullish(),
    verbosity: optStr,
  }).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  safety_identifier: optStr,
  user: optStr,
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  include: z.array(str).nullish(),
  previous_response_id: z.string().regex(
    /^resp_[A-Za-z0-9_-]{1,200}$/,
    'expected a response id ("resp_…")',
  ).nullish(),
  background: z.boolean().nullish(),
  generate: z.boolean().nullish(),
  conversation: z.union([str, z.looseObject({ id: str })]).nullish(),
  prompt: z.looseObject({ id: str }).nullish(),
});

export type ResponsesRequest = z.infer<typeof requestSchema>;

/** A value `requestSchema` already validated, typed by the schema its `type` selected. */
export const validated = <T extends z.ZodType>(value: unknown, _schema: T) => value as z.infer<T>;
export type InputItem = Exclude<ResponsesRequest["input"], string | undefined>[number];
export type Tool = NonNullable<ResponsesRequest["tools"]>[number];
export type Content = z.infer<typeof content>;
export type ContentPart = z.infer<typeof contentPart>;

/** The typed request, or a 400 naming the first bad field (e.g. `input[2].content`). */
export function parseRequest(body: unknown): ResponsesRequest {
  return parseBody(requestSchema, body);
}
