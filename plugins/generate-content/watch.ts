/**
 * A relayed Gemini stream has no end marker of its own: its last chunk carries `finishReason`
 * (or it is an error chunk). Every chunk may carry `usageMetadata`; the last one counts.
 */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { ERROR_PAYLOAD, lastUsage } from "../shared.ts";
import { decodeUsage } from "./chunks.ts";

export function watch(): StreamWatch {
  const last = lastUsage((json) => decodeUsage(json.usageMetadata));
  return {
    inspect(e) {
      if (ERROR_PAYLOAD.test(e.data)) return true;
      if (e.data.includes('"usageMetadata"')) last.keep(e.data);
      return e.data.includes('"finishReason"');
    },
    usage: last.usage,
  };
}
