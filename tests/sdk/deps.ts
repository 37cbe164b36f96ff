/**
 * The published SDKs the real-SDK tests drive (pinned in deno.json's import map).
 */
export { default as OpenAI } from "openai";
export { default as Anthropic } from "@anthropic-ai/sdk";
export { default as Anthropic0 } from "@anthropic-ai/sdk-0";
export { ApiError, GoogleGenAI, Type } from "@google/genai";
export type {
  Content,
  GenerateContentConfig,
  GenerateContentParameters,
  GenerateContentResponse,
  GenerateContentResponseUsageMetadata,
  Part,
  Tool as GeminiTool,
} from "@google/genai";
export { APICallError, generateText, stepCountIs, streamText, tool } from "ai";
export type { LanguageModel, LanguageModelUsage } from "ai";
export { createOpenAI } from "@ai-sdk/openai";
export { createAnthropic } from "@ai-sdk/anthropic";
export { createGoogleGenerativeAI } from "@ai-sdk/google";
