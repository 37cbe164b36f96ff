/**
 * The Interactions request body (`POST /v1beta/interactions`, model form) as @google/genai's
 * `CreateModelInteraction` declares it: snake_case, `input` as text, one content, a content list
 * or a list of steps. Objects are loose and unknown step, content and tool types pass, so a
 * relayed request may use what this gateway does not convert; `agent` and `background` are
 * recognised here and refused by the converting decoder.
 */
import { z } from "zod";
import { parseBody, sparseObject, tagged } from "../../src/kit/validate.ts";

const record = z.record(z.string(), z.unknown());

const media = {
  data: z.string().optional(),
  uri: z.string().optional(),
  mime_type: z.string().optional(),
};

/** Content blocks (`Content_2`), by `type`. */
const CONTENT: Record<string, z.ZodType> = {
  text: z.looseObject({ text: z.string(), annotations: z.array(record).optional() }),
  image: z.looseObject(media),
  document: z.looseObject(media),
  audio: z.looseObject(media),
  video: z.looseObject(media),
};

/** Whether a `type` names a content block rather than a step. */
export const isContentType = (type: string | undefined): boolean =>
  type !== undefined && type in CONTENT;

const content = tagged(() => CONTENT);

/** Steps (`Step`) a client sends back as history, by `type`. */
const STEP: Record<string, z.ZodType> = {
  user_input: z.looseObject({ content: z.array(content).optional() }),
  model_output: z.looseObject({ content: z.array(content).optional() }),
  thought: z.looseObject({
    signature: z.string().optional(),
    summary: z.array(content).optional(),
  }),
  function_call: z.looseObject({ id: z.string(), name: z.string(), arguments: record }),
  function_result: z.looseObject({
    call_id: z.string(),
    name: z.string().optional(),
    is_error: z.boolean().optional(),
    result: z.union([z.string(), z.array(content), record]),
  }),
  google_search_call: z.looseObject({
    id: z.string(),
    arguments: z.looseObject({ queries: z.array(z.string()).optional() }),
  }),
  url_context_call: z.looseObject({
    id: z.string(),
    arguments: z.looseObject({ urls: z.array(z.string()).optional() }),
  }),
  google_search_result: z.looseObject({ call_id: z.string(), result: z.array(record) }),
  url_context_result: z.looseObject({ call_id: z.string(), result: z.array(record) }),
};

/** One element of an `input` list: a content block or a step (told apart by `type`). */
const inputItem = tagged(() => ({ ...CONTENT, ...STEP }));

const input = z.union([z.string(), z.array(inputItem), inputItem]);

/** Tools (`Tool_2`), by `type`; hosted ones other than these pass and are mapped or refused. */
const TOOL: Record<string, z.ZodType> = {
  function: z.looseObject({
    name: z.string(),
    description: z.string().optional(),
    parameters: record.optional(),
  }),
  google_search: z.looseObject({ search_types: z.array(z.string()).optional() }),
  url_context: z.looseObject({}),
};

const toolChoiceType = z.enum(["auto", "any", "none", "validated"]);

const generationConfig = sparseObject({}, {
  temperature: z.number(),
  top_p: z.number(),
  seed: z.number().int(),
  max_output_tokens: z.number().int(),
  stop_sequences: z.array(z.string()),
  thinking_level: z.enum(["minimal", "low", "medium", "high"]),
  thinking_summaries: z.enum(["auto", "none"]),
  tool_choice: z.union([
    toolChoiceType,
    z.looseObject({
      allowed_tools: z.looseObject({
        mode: toolChoiceType.optional(),
        tools: z.array(z.string()).optional(),
      }).optional(),
    }),
  ]),
});

const responseFormat = z.looseObject({
  type: z.string(),
  mime_type: z.string().optional(),
  schema: record.optional(),
});

const requestSchema = sparseObject({}, {
  model: z.string(),
  agent: z.string(),
  input,
  system_instruction: z.string(),
  tools: z.array(tagged(() => TOOL)),
  generation_config: generationConfig,
  response_format: z.union([responseFormat, z.array(responseFormat)]),
  response_mime_type: z.string(),
  response_modalities: z.array(z.string()),
  stream: z.boolean(),
  store: z.boolean(),
  background: z.boolean(),
  previous_interaction_id: z.string(),
  continuation_token: z.string(),
});

export type InteractionsRequest = z.infer<typeof requestSchema>;
export type InputItem = z.infer<typeof inputItem>;
export type GenerationConfig = z.infer<typeof generationConfig>;
export type ResponseFormat = z.infer<typeof responseFormat>;

/** The typed request; throws a 400 naming the first bad field. */
export function parseRequest(body: unknown): InteractionsRequest {
  return parseBody(requestSchema, body);
}
