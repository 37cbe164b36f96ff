/**
 * The Gemini generateContent request body as clients send it (REST names). Objects are loose:
 * fields this gateway does not model pass through validation untouched. The REST API also
 * accepts the proto's snake_case names (`system_instruction`, `inline_data`, …, as in Google's
 * curl examples); each object maps those to camelCase for the keys it models.
 */
import { z } from "zod";
import { parseBody } from "../../src/kit/validate.ts";

const toCamel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** A loose object whose modelled keys may also arrive in snake_case. */
function obj<T extends z.ZodRawShape>(shape: T) {
  const aliases = (value: unknown) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const camel = toCamel(key);
      out[camel in shape && !(camel in value) ? camel : key] = v;
    }
    return out;
  };
  return z.preprocess(aliases, z.looseObject(shape));
}

/** Proto enums arrive upper-case from SDKs; curl examples in Google's docs use lower case. */
const upperEnum = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.preprocess((v) => (typeof v === "string" ? v.toUpperCase() : v), z.enum(values));

const record = z.record(z.string(), z.unknown());

const blob = obj({ mimeType: z.string(), data: z.string() });
const fileData = obj({ mimeType: z.string().optional(), fileUri: z.string() });

const functionCall = obj({
  id: z.string().optional(),
  name: z.string(),
  args: record.nullish(),
});

const functionResponse = obj({
  id: z.string().optional(),
  name: z.string(),
  response: record.nullish(),
  parts: z.array(obj({ inlineData: blob.optional(), fileData: fileData.optional() })).optional(),
});

const part = obj({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  inlineData: blob.optional(),
  fileData: fileData.optional(),
  functionCall: functionCall.optional(),
  functionResponse: functionResponse.optional(),
});

const content = obj({
  role: z.enum(["user", "model"]).optional(),
  parts: z.array(part).optional(),
});

const functionDeclaration = obj({
  name: z.string(),
  description: z.string().optional(),
  parameters: record.optional(),
  parametersJsonSchema: record.optional(),
});

const tool = obj({ functionDeclarations: z.array(functionDeclaration).optional() });

const toolConfig = obj({
  functionCallingConfig: obj({
    mode: upperEnum(["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"]).optional(),
    allowedFunctionNames: z.array(z.string()).optional(),
  }).optional(),
});

const thinkingConfig = obj({
  thinkingBudget: z.number().int().optional(),
  thinkingLevel: upperEnum(["THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH"])
    .optional(),
  includeThoughts: z.boolean().optional(),
});

const generationConfig = obj({
  temperature: z.number().optional(),
  topP: z.number().optional(),
  topK: z.number().int().optional(),
  maxOutputTokens: z.number().int().optional(),
  stopSequences: z.array(z.string()).optional(),
  candidateCount: z.number().int().optional(),
  seed: z.number().int().optional(),
  presencePenalty: z.number().optional(),
  frequencyPenalty: z.number().optional(),
  responseMimeType: z.string().optional(),
  responseSchema: record.optional(),
  responseJsonSchema: record.optional(),
  responseModalities: z.array(z.string()).optional(),
  responseLogprobs: z.boolean().optional(),
  logprobs: z.number().int().optional(),
  thinkingConfig: thinkingConfig.optional(),
});

const requestSchema = obj({
  contents: z.array(content).optional(),
  // Its role is ignored by Gemini, so any string passes.
  systemInstruction: obj({ role: z.string().optional(), parts: z.array(part).optional() })
    .optional(),
  tools: z.array(tool).optional(),
  toolConfig: toolConfig.optional(),
  generationConfig: generationConfig.optional(),
  safetySettings: z.array(record).optional(),
  cachedContent: z.string().optional(),
  continuationToken: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  serviceTier: z.string().optional(),
});

export type GeminiRequest = z.infer<typeof requestSchema>;
export type GeminiContent = z.infer<typeof content>;
export type GeminiPart = z.infer<typeof part>;
export type GeminiFunctionDeclaration = z.infer<typeof functionDeclaration>;
export type GeminiGenerationConfig = z.infer<typeof generationConfig>;

/** The typed, camelCased request; throws a 400 naming the first bad field. */
export function parseRequest(body: unknown): GeminiRequest {
  return parseBody(requestSchema, body);
}

export function validateRequest(body: unknown): Record<string, unknown> {
  return parseRequest(body);
}
