/**
 * A relayed Interactions stream ends with `interaction.completed` (which carries the usage) or
 * an `error` event.
 */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { lastUsage } from "../shared.ts";
import { decodeUsage } from "./steps.ts";

const TERMINAL = /"event_type"\s*:\s*"(interaction\.completed|error)"/;

export function watch(): StreamWatch {
  const last = lastUsage((json) => decodeUsage((json.interaction as { usage?: unknown })?.usage));
  return {
    inspect(e) {
      const end = TERMINAL.exec(e.data);
      if (end?.[1] === "interaction.completed") last.keep(e.data);
      return end !== null;
    },
    usage: last.usage,
  };
}
