/**
 * How Claude caches prompts, wherever it is served (Anthropic's API, Bedrock InvokeModel and
 * Converse, Vertex): only at the breakpoints a request marks, at most four, and a prefix shorter
 * than the model's minimum is not cached (Anthropic's prompt-caching documentation).
 */
import type { PromptCaching } from "../../src/kit/format.ts";

/**
 * The minimum cacheable prefix of a Claude model, by its name as any platform spells it
 * (`claude-opus-4-5`, `anthropic.claude-3-5-haiku-…`, `claude-sonnet-4-6@…`): 4096 tokens for
 * Opus 4.5/4.6 and Haiku 4.5, 2048 for Sonnet 4.6 and the Haiku 3 models, else 1024 (Sonnet
 * 4/4.5, Opus 4/4.1, and names it does not know: the lowest, since a breakpoint below the real
 * minimum costs nothing).
 */
export function claudeMinTokens(model: string): number {
  if (/opus-4-[56]|haiku-4-5/.test(model)) return 4096;
  if (/sonnet-4-6|haiku/.test(model)) return 2048;
  return 1024;
}

/** Claude's breakpoints: four, anywhere of tools, system and messages. */
export const claudeCaching = (model: string): PromptCaching => ({
  kind: "breakpoints",
  max: 4,
  tools: true,
  minTokens: claudeMinTokens(model),
});
