/**
 * Which Converse models take a `cachePoint` (AWS's prompt-caching documentation): Claude, four
 * anywhere of tools, system and messages; Amazon Nova, four in system and messages only (a
 * `cachePoint` among its tools is refused), from about 1,000 tokens; every other model refuses
 * one ("You invoked an unsupported model, or your request did not allow prompt caching").
 */
import type { PromptCaching } from "../../src/kit/format.ts";
import { claudeCaching } from "../messages/caching.ts";
import { isClaude } from "./common.ts";

/** An application inference profile's ARN: it does not say which model it serves. */
const OPAQUE = /:application-inference-profile\//;

export function converseCaching(model: string): PromptCaching | undefined {
  if (isClaude(model)) return claudeCaching(model);
  if (/amazon\.nova-/i.test(model)) {
    return { kind: "breakpoints", max: 4, tools: false, minTokens: 1000 };
  }
  // The client's own breakpoints go as they are; the gateway adds none it cannot know are taken.
  if (OPAQUE.test(model)) return undefined;
  return { kind: "none" };
}
