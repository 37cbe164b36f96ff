/**
 * A relayed Anthropic stream ends with `message_stop` or an `error` event. Usage comes in two
 * parts: input counts in `message_start`, cumulative output counts in `message_delta`; on
 * Bedrock, its own counts in `message_stop` (bedrock_metrics.ts) replace them.
 */
import type { StreamWatch } from "../../src/kit/codec.ts";
import { jsonObjectOf, members, stringChars } from "../shared.ts";
import { METRICS_KEY, withBedrockMetrics } from "./bedrock_metrics.ts";
import { type Obj, usageToIr, type WireUsage } from "./common.ts";

const TYPE = /"type"\s*:\s*"([^"]+)"/;
/** What a content block's delta adds: text, thinking, a tool call's input. */
const OUTPUT = members(["text", "thinking", "partial_json"]);

export function watch(): StreamWatch {
  let start: string | undefined;
  let delta: string | undefined;
  let stop: string | undefined;
  let output = 0;
  return {
    inspect(e) {
      const type = e.event ?? e.data.match(TYPE)?.[1];
      if (type === "content_block_delta") output += stringChars(e.data, OUTPUT);
      else if (type === "message_start") start = e.data;
      else if (type === "message_delta") delta = e.data;
      else if (type === "message_stop") stop = e.data;
      return type === "message_stop" || type === "error";
    },
    output: () => output,
    usage() {
      if (start === undefined && delta === undefined) return undefined;
      const first = (jsonObjectOf(start ?? "{}")?.message as Obj | undefined)?.usage;
      const later = jsonObjectOf(delta ?? "{}")?.usage as Obj | undefined;
      const usage: Obj = { ...(first as Obj | undefined) };
      for (const [k, v] of Object.entries(later ?? {})) if (v != null) usage[k] = v;
      // Parsed only on Bedrock, whose last event carries its own counts.
      const billed = stop?.includes(METRICS_KEY) ? jsonObjectOf(stop) : undefined;
      return usageToIr(billed ? withBedrockMetrics(usage, billed) : usage as WireUsage);
    },
  };
}
