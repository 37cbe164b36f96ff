/**
 * The published SDKs the real-SDK tests drive, pinned here rather than in deno.json's import
 * map: `deno task dev/start` installs every package of the import map, and these are tests'.
 */
export { default as OpenAI } from "npm:openai@6.49.0";
export { default as Anthropic } from "npm:@anthropic-ai/sdk@1.11.0";
export { default as Anthropic0 } from "npm:@anthropic-ai/sdk@0.137.0";
export { ApiError, GoogleGenAI, Type } from "npm:@google/genai@2.32.0";
export type {
  Content,
  GenerateContentConfig,
  GenerateContentParameters,
  GenerateContentResponse,
  GenerateContentResponseUsageMetadata,
  Part,
  Tool as GeminiTool,
} from "npm:@google/genai@2.32.0";
export {
  APICallError,
  embed,
  embedMany,
  generateText,
  stepCountIs,
  streamText,
  tool,
} from "npm:ai@6.0.322";
export type { LanguageModel, LanguageModelUsage } from "npm:ai@6.0.322";
export { createOpenAI } from "npm:@ai-sdk/openai@3.0.141";
export { createAnthropic } from "npm:@ai-sdk/anthropic@3.0.137";
export { createGoogleGenerativeAI } from "npm:@ai-sdk/google@3.0.141";
export { OpenAIEmbeddings } from "npm:@langchain/openai@1.5.8";
