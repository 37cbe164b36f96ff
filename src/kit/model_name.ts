/**
 * A client's model name is bounded: it becomes a metric label, an access-log field and part of
 * error messages, so an unbounded one would let a client grow the gateway's memory (and its
 * `/metrics` scrape) at will. No real model id comes near the bound.
 */

/** The longest model name accepted, in characters. */
export const MAX_MODEL_CHARS = 256;

/** `text` cut to `max` characters, an ellipsis marking the cut: safe to echo or log. */
export function clip(text: string, max = MAX_MODEL_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
