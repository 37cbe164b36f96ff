/** A relayed chat stream ends with `data: [DONE]` or an error chunk; usage is in its last chunk. */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { ERROR_PAYLOAD, lastUsage, stringChars } from "../shared.ts";
import type { ChatUsage } from "./schema.ts";
import { usageToIr } from "./wire.ts";

const USAGE = /"usage"\s*:\s*\{/;
/** Members of a delta that carry output (`reasoning_content` or `reasoning`: one of the two). */
const OUTPUT = ["content", "refusal", "arguments"];

export function watch(): StreamWatch {
  const last = lastUsage((json) => usageToIr(json.usage as ChatUsage));
  let output = 0;
  return {
    inspect(e) {
      if (e.data === "[DONE]" || ERROR_PAYLOAD.test(e.data)) return true;
      if (USAGE.test(e.data)) last.keep(e.data);
      output += stringChars(e.data, OUTPUT) +
        Math.max(stringChars(e.data, ["reasoning_content"]), stringChars(e.data, ["reasoning"]));
      return false;
    },
    usage: last.usage,
    output: () => output,
  };
}
