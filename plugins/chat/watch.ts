/** A relayed chat stream ends with `data: [DONE]` or an error chunk; usage is in its last chunk. */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { ERROR_PAYLOAD, lastUsageEvent, members, stringChars } from "../shared.ts";

const USAGE = /"usage"\s*:\s*\{/;
/** Members of a delta that carry output. */
const OUTPUT = members(["content", "refusal", "arguments"]);
/** Reasoning, under either name (a server may send both spellings of one text: one counts). */
const REASONING = members(["reasoning_content", "reasoning"]);

export function watch(): StreamWatch {
  const last = lastUsageEvent();
  let output = 0;
  return {
    inspect(e) {
      if (e.data === "[DONE]" || ERROR_PAYLOAD.test(e.data)) return true;
      if (USAGE.test(e.data)) last.keep(e.data);
      output += stringChars(e.data, OUTPUT) + stringChars(e.data, REASONING, true);
      return false;
    },
    usageEvents: last.usageEvents,
    output: () => output,
  };
}
