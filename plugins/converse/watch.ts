/**
 * A relayed ConverseStream ends with `metadata` (after `messageStop`), which carries the usage,
 * or with an exception.
 */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { jsonObjectOf } from "../shared.ts";
import { usageOf } from "./response.ts";

export function watch(): StreamWatch {
  let metadata: string | undefined;
  return {
    inspect(e) {
      if (e.event === "metadata") {
        metadata = e.data;
        return true;
      }
      return e.event?.endsWith("Exception") === true;
    },
    usage: () => metadata === undefined ? undefined : usageOf(jsonObjectOf(metadata) ?? {}),
  };
}
