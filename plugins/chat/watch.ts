/** A relayed chat stream ends with `data: [DONE]` or an error chunk; usage is in its last chunk. */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { ERROR_PAYLOAD, lastUsage } from "../shared.ts";
import type { ChatUsage } from "./schema.ts";
import { usageToIr } from "./wire.ts";

const USAGE = /"usage"\s*:\s*\{/;

export function watch(): StreamWatch {
  const last = lastUsage((json) => usageToIr(json.usage as ChatUsage));
  return {
    inspect(e) {
      if (e.data === "[DONE]" || ERROR_PAYLOAD.test(e.data)) return true;
      if (USAGE.test(e.data)) last.keep(e.data);
      return false;
    },
    usage: last.usage,
  };
}
