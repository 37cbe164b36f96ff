/**
 * The Converse request body (`/model/{modelId}/converse`, `/converse-stream`) as the AWS SDKs
 * send it: unions are objects with one member (`{"text": …}`, `{"toolUse": …}`), blobs are
 * base64. Objects are loose (new fields pass, which keeps relayed routes working); which member
 * a block holds is read by the decoder, which names the block when it holds none it knows.
 */
import { z } from "zod";
import { parseBody } from "../../src/kit/validate.ts";

const cachePoint = z.looseObject({ type: z.string(), ttl: z.string().optional() });

const source = z.looseObject({
  bytes: z.string().optional(),
  s3Location: z.looseObject({ uri: z.string() }).optional(),
  text: z.string().optional(),
});

export const imageBlock = z.looseObject({ format: z.string(), source });

export const documentBlock = z.looseObject({
  format: z.string().optional(),
  name: z.string(),
  source,
});

export const toolUseBlock = z.looseObject({
  toolUseId: z.string(),
  name: z.string(),
  input: z.unknown(),
});

const toolResultContent = z.looseObject({
  text: z.string().optional(),
  json: z.unknown().optional(),
  image: imageBlock.optional(),
  document: documentBlock.optional(),
});

export const toolResultBlock = z.looseObject({
  toolUseId: z.string(),
  content: z.array(toolResultContent),
  status: z.enum(["success", "error"]).optional(),
});

export const reasoningBlock = z.looseObject({
  reasoningText: z.looseObject({ text: z.string(), signature: z.string().optional() }).optional(),
  redactedContent: z.string().optional(),
});

export const contentBlock = z.looseObject({
  text: z.string().optional(),
  image: imageBlock.optional(),
  document: documentBlock.optional(),
  toolUse: toolUseBlock.optional(),
  toolResult: toolResultBlock.optional(),
  reasoningContent: reasoningBlock.optional(),
  cachePoint: cachePoint.optional(),
  citationsContent: z.looseObject({
    content: z.array(z.looseObject({ text: z.string().optional() })).optional(),
  }).optional(),
});

const message = z.looseObject({
  role: z.enum(["user", "assistant"]),
  content: z.array(contentBlock),
});

const systemBlock = z.looseObject({
  text: z.string().optional(),
  cachePoint: cachePoint.optional(),
});

const toolSpec = z.looseObject({
  name: z.string(),
  description: z.string().optional(),
  inputSchema: z.looseObject({ json: z.record(z.string(), z.unknown()) }),
  strict: z.boolean().optional(),
});

const tool = z.looseObject({
  toolSpec: toolSpec.optional(),
  systemTool: z.looseObject({ name: z.string() }).optional(),
  cachePoint: cachePoint.optional(),
});

const toolChoice = z.looseObject({
  auto: z.looseObject({}).optional(),
  any: z.looseObject({}).optional(),
  tool: z.looseObject({ name: z.string() }).optional(),
});

/** What a Converse request and a CountTokens `converse` input share. */
const conversation = {
  messages: z.array(message),
  system: z.array(systemBlock).optional(),
  toolConfig: z.looseObject({ tools: z.array(tool), toolChoice: toolChoice.optional() })
    .optional(),
  additionalModelRequestFields: z.record(z.string(), z.unknown()).optional(),
};

const request = z.looseObject({
  ...conversation,
  inferenceConfig: z.looseObject({
    maxTokens: z.number().int().positive().optional(),
    temperature: z.number().min(0).optional(),
    topP: z.number().min(0).max(1).optional(),
    stopSequences: z.array(z.string()).optional(),
  }).optional(),
  requestMetadata: z.record(z.string(), z.string()).optional(),
  outputConfig: z.looseObject({
    textFormat: z.looseObject({
      type: z.string(),
      structure: z.looseObject({
        jsonSchema: z.looseObject({
          schema: z.string(),
          name: z.string().optional(),
          description: z.string().optional(),
        }).optional(),
      }),
    }).optional(),
    effort: z.string().optional(),
  }).optional(),
});

export type ConverseRequest = z.infer<typeof request>;
export type ContentBlock = z.infer<typeof contentBlock>;

export const parseRequest = (body: unknown): ConverseRequest => parseBody(request, body);

/** Validates a client body, with the field named on a 400. */
export function validateRequest(body: unknown): void {
  parseRequest(body);
}

/** CountTokens' `input`: an InvokeModel body (base64) or a Converse conversation. */
const countInput = z.looseObject({
  input: z.looseObject({
    invokeModel: z.looseObject({ body: z.string() }).optional(),
    converse: z.looseObject(conversation).optional(),
  }),
});

export type CountTokensRequest = z.infer<typeof countInput>;

export const parseCountTokens = (body: unknown): CountTokensRequest => parseBody(countInput, body);
