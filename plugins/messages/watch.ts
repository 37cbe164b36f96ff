/**
 * A relayed Anthropic stream ends with `message_stop` or an `error` event. Usage comes in two
 * parts, both kept for the codec's `usage`: input counts in `message_start`, cumulative output
 * counts in `message_delta`.
 */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { members, stringChars } from "../shared.ts";

const TYPE = /"type"\s*:\s*"([^"]+)"/;
/** What a content block's delta adds: text, thinking, a tool call's input. */
const OUTPUT = members(["text", "thinking", "partial_json"]);

export function watch(): StreamWatch {
  let start: string | undefined;
  let delta: string | undefined;
  let output = 0;
  return {
    inspect(e) {
      const type = e.event ?? e.data.match(TYPE)?.[1];
      if (type === "content_block_delta") output += stringChars(e.data, OUTPUT);
      else if (type === "message_start") start = e.data;
      else if (type === "message_delta") delta = e.data;
      return type === "message_stop" || type === "error";
    },
    usageEvents() {
      const kept: string[] = [];
      if (start !== undefined) kept.push(start);
      if (delta !== undefined) kept.push(delta);
      return kept;
    },
    output: () => output,
  };
}
