/** A relayed Responses stream ends with its terminal event, whose response carries the usage. */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { lastUsageEvent, members, stringChars } from "../shared.ts";

const TERMINAL = new Set([
  "response.completed",
  "response.incomplete",
  "response.failed",
  "error",
]);
const TYPE = /"type"\s*:\s*"([^"]+)"/;

/** Every `*.delta` event's `delta` is output: text, refusal, reasoning, a call's arguments. */
const OUTPUT = members(["delta"]);

export function watch(): StreamWatch {
  const last = lastUsageEvent();
  let output = 0;
  return {
    inspect(e) {
      // The `event:` line names the type; a provider that omits it has it first in the JSON.
      const type = e.event ?? e.data.match(TYPE)?.[1];
      if (!type) return false;
      if (type.endsWith(".delta")) {
        output += stringChars(e.data, OUTPUT);
        return false;
      }
      if (!TERMINAL.has(type)) return false;
      if (type !== "error") last.keep(e.data);
      return true;
    },
    usageEvents: last.usageEvents,
    output: () => output,
  };
}
