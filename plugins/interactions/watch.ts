/**
 * A relayed Interactions stream ends with `interaction.completed` (which carries the usage) or
 * an `error` event.
 */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { lastUsageEvent, members, stringChars } from "../shared.ts";

const TERMINAL = /"event_type"\s*:\s*"(interaction\.completed|error)"/;
const DELTA = /"event_type"\s*:\s*"step\.delta"/;
/** What a step's delta adds: text (a thought summary's too), a call's arguments. */
const OUTPUT = members(["text", "arguments"]);

export function watch(): StreamWatch {
  const last = lastUsageEvent();
  let output = 0;
  return {
    inspect(e) {
      const end = TERMINAL.exec(e.data);
      if (end?.[1] === "interaction.completed") last.keep(e.data);
      else if (end === null && DELTA.test(e.data)) output += stringChars(e.data, OUTPUT);
      return end !== null;
    },
    usageEvents: last.usageEvents,
    output: () => output,
  };
}
