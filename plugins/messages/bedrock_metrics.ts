/**
 * Amazon Bedrock's own token counts in a Claude stream: InvokeModelWithResponseStream's last
 * event (`message_stop`) carries `amazon-bedrock-invocationMetrics`. They are the counts AWS
 * bills, so they replace those the Anthropic events reported; the events' split of output into
 * thinking stays (Bedrock's metrics have none). Any other stream's `message_stop` has no such
 * key and changes nothing.
 */
import type { Obj, WireUsage } from "./common.ts";

export const METRICS_KEY = "amazon-bedrock-invocationMetrics";

/** Bedrock's metric names as Anthropic's usage fields. */
const FIELDS: [metric: string, field: keyof WireUsage][] = [
  ["inputTokenCount", "input_tokens"],
  ["outputTokenCount", "output_tokens"],
  ["cacheReadInputTokenCount", "cache_read_input_tokens"],
  ["cacheWriteInputTokenCount", "cache_creation_input_tokens"],
];

/** `usage` with the counts Bedrock's metrics in `stop` (a `message_stop` event) give. */
export function withBedrockMetrics(usage: WireUsage, stop: Obj): WireUsage {
  const metrics = stop[METRICS_KEY] as Obj | undefined;
  if (!metrics || typeof metrics !== "object") return usage;
  const out: Obj = { ...usage };
  for (const [metric, field] of FIELDS) {
    if (typeof metrics[metric] === "number") out[field] = metrics[metric];
  }
  return out as WireUsage;
}
