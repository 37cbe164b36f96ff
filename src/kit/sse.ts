/**
 * Server-sent events as the codecs see them. Upstream bytes are split into events by the relay's
 * stream stage (src/request/stream_stage.ts), which must know byte boundaries to forward whole events;
 * tests check it against eventsource-parser on every golden stream.
 */

export interface SseEvent {
  /** The `event:` line; absent for data-only formats (chat, Gemini). */
  event?: string;
  data: string;
}

/**
 * A whole JSON payload, judged by its first and last characters (a bracketed end marker such as
 * chat's passes as an array): a relayed stream ends at an event that is not, as a malformed one.
 */
export function looksWhole(data: string): boolean {
  const t = data.trim();
  const first = t[0];
  const last = t[t.length - 1];
  return (first === "{" && last === "}") || (first === "[" && last === "]");
}

export function formatSse(e: SseEvent): string {
  return e.event ? `event: ${e.event}\ndata: ${e.data}\n\n` : `data: ${e.data}\n\n`;
}

/** A JSON event with its `event:` name taken from its `type` (Responses, Anthropic style). */
export function typedEvent(data: { type: string }): SseEvent {
  return { event: data.type, data: JSON.stringify(data) };
}

/** A data-only JSON event (chat, Gemini style). */
export function dataEvent(data: unknown): SseEvent {
  return { data: JSON.stringify(data) };
}
