/**
 * A relayed Gemini stream has no end marker of its own: its last chunk carries `finishReason`
 * (or it is an error chunk). Every chunk may carry `usageMetadata`; the last one counts (the
 * prompt's count comes with the first chunks).
 */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { ERROR_PAYLOAD, lastUsageEvent, members, stringChars } from "../shared.ts";

/** Parts' text, thoughts included (a function call's `args` is an object: not counted). */
const OUTPUT = members(["text"]);

export function watch(): StreamWatch {
  const last = lastUsageEvent();
  let output = 0;
  return {
    inspect(e) {
      if (ERROR_PAYLOAD.test(e.data)) return true;
      if (e.data.includes('"usageMetadata"')) last.keep(e.data);
      output += stringChars(e.data, OUTPUT);
      return e.data.includes('"finishReason"');
    },
    usageEvents: last.usageEvents,
    output: () => output,
  };
}
