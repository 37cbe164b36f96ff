/**
 * The cloud platforms' official clients that tests/platform_mocks_test.ts drives against the
 * platform mocks, pinned here like deps.ts (tests' packages stay out of deno.json's import map).
 */
export {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  CountTokensCommand,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
} from "npm:@aws-sdk/client-bedrock-runtime@3.1164.0";
export { AnthropicBedrock } from "npm:@anthropic-ai/bedrock-sdk@1.1.3";
export { AnthropicVertex } from "npm:@anthropic-ai/vertex-sdk@1.1.3";
export { GoogleAuth, OAuth2Client } from "npm:google-auth-library@10.9.1";
export { AzureOpenAI, default as OpenAI } from "npm:openai@6.49.0";
export { GoogleGenAI } from "npm:@google/genai@2.32.0";
