/**
 * Usage through one door (docs/design.md#usage). Wherever a provider's answer carries its token
 * counts — a JSON answer's body or headers, a stream's events, a socket response's terminal
 * frame — they are handed over as one `UsageSource`; a format reads them with one hook
 * (`Codec.usage`, or an `OtherEndpoint`'s own `usage`), and a platform that bills by its own
 * counts with one more (`Platform.usage`), given the format's reading. The core calls both for
 * relayed and converted answers alike and reports the result to the request's trace once per
 * answer (src/request/usage.ts).
 */
import type { Usage } from "./ir.ts";

/** Where one answer's usage is: its JSON that may carry counts, and its headers. */
export interface UsageSource {
  /**
   * In the order it came: a JSON answer's whole body; a stream's events its watch kept
   * (`StreamWatch.usageEvents`), then — for a platform's hook only — its terminal event; a
   * socket response's terminal frame.
   */
  readonly json: readonly Record<string, unknown>[];
  /** A JSON answer's response headers (a stream's or a socket's usage is in its events). */
  readonly headers?: Headers;
}

/**
 * A format's reading of an answer's usage: the counts its objects carry, later ones replacing
 * earlier ones where a stream reports in parts (Anthropic: input counts first, output counts at
 * the end); undefined where none does. It may throw on a shape it does not expect: the answer
 * then goes on without usage.
 */
export type ReadUsage = (from: UsageSource) => Usage | undefined;
