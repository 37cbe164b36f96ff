/**
 * A relayed ConverseStream ends with `metadata` (after `messageStop`), which carries the usage,
 * or with an exception.
 */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { members, stringChars } from "../shared.ts";

/** What a block's delta adds: text, reasoning text, a tool call's input. */
const OUTPUT = members(["text", "input"]);

export function watch(): StreamWatch {
  let metadata: string | undefined;
  let output = 0;
  return {
    inspect(e) {
      if (e.event === "contentBlockDelta") output += stringChars(e.data, OUTPUT);
      else if (e.event === "metadata") {
        metadata = e.data;
        return true;
      }
      return e.event?.endsWith("Exception") === true;
    },
    output: () => output,
    usageEvents: () => metadata === undefined ? [] : [metadata],
  };
}
