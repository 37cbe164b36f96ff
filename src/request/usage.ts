/**
 * The door every answer's usage goes through (src/kit/usage.ts): its format's reading, then its
 * platform's counts over it. Relayed JSON answers and streams, converted ones and a relaying
 * socket's responses all come here, and each answer's result is reported to its trace once.
 * A converted answer carries its usage in the IR (the client's answer repeats it): its platform's
 * counts are put there (`billedEvent`) before the client's encoder and the trace see them.
 */
import type { StreamWatch } from "../kit/codec.ts";
import type { StreamEvent, Usage } from "../kit/ir.ts";
import type { AnyPlatform } from "../kit/platform.ts";
import type { ReadUsage, UsageSource } from "../kit/usage.ts";

/** An answer's usage: `read` (its format's hook) over `from`, then its platform's counts. */
export function usageOf(
  read: ReadUsage,
  from: UsageSource,
  platform?: AnyPlatform,
): Usage | undefined {
  return billed(platform, from, formatUsage(read, from));
}

/** The platform's own counts over the format's reading (`format`), where it reports them. */
export function billed(
  platform: AnyPlatform | undefined,
  from: UsageSource,
  format: Usage | undefined,
): Usage | undefined {
  return platform?.usage?.(from, format) ?? format;
}

/**
 * A relayed stream's usage, read once it ended: the events its watch kept and, for a platform
 * that reports usage, its terminal event (`end`).
 */
export function streamUsage(
  read: ReadUsage,
  watch: StreamWatch,
  platform?: AnyPlatform,
): (end: string | undefined) => Usage | undefined {
  return (end) => {
    const from = { json: objects(watch.usageEvents()) };
    const format = formatUsage(read, from);
    if (!platform?.usage) return format;
    const last = end === undefined ? undefined : objectOf(end);
    return billed(platform, last ? { json: [...from.json, last] } : from, format);
  };
}

/**
 * For a platform that reports usage, a converted stream's IR event with the platform's counts
 * over those its format decoded; `data` is the upstream event it was decoded from. Undefined
 * for any other platform: its events pass untouched.
 */
export function billedEvent(
  platform: AnyPlatform | undefined,
): ((data: string, e: StreamEvent) => StreamEvent) | undefined {
  if (!platform?.usage) return undefined;
  return (data, e) => {
    if ((e.type !== "start" && e.type !== "usage" && e.type !== "finish") || !e.usage) return e;
    const json = objectOf(data);
    const usage = billed(platform, { json: json ? [json] : [] }, e.usage) ?? e.usage;
    return usage === e.usage ? e : { ...e, usage };
  };
}

/** What the events a watch kept say of a stream's usage (so far, if it was cut). */
export function watchedUsage(read: ReadUsage, watch: StreamWatch): Usage | undefined {
  return formatUsage(read, { json: objects(watch.usageEvents()) });
}

/** The format's reading; a shape it did not expect loses only the usage, not the answer. */
function formatUsage(read: ReadUsage, from: UsageSource): Usage | undefined {
  try {
    return read(from);
  } catch {
    return undefined;
  }
}

function objects(texts: readonly string[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const text of texts) {
    const json = objectOf(text);
    if (json) out.push(json);
  }
  return out;
}

function objectOf(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
