/** Server-sent events: parse upstream bytes into events, serialize events for clients. */
import { EventSourceParserStream } from "eventsource-parser/stream";

export interface SseEvent {
  /** The `event:` line; absent for data-only formats (chat, Gemini). */
  event?: string;
  data: string;
}

/** Upstream bytes to SSE events (eventsource-parser handles every framing edge case). */
export function parseSse(body: ReadableStream<Uint8Array>): ReadableStream<SseEvent> {
  return body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
}

export function formatSse(e: SseEvent): string {
  return e.event ? `event: ${e.event}\ndata: ${e.data}\n\n` : `data: ${e.data}\n\n`;
}

/** SSE events to wire text. */
export function serializeSse(): TransformStream<SseEvent, string> {
  return new TransformStream({ transform: (e, out) => out.enqueue(formatSse(e)) });
}

/** A JSON event with its `event:` name taken from its `type` (Responses, Anthropic style). */
export function typedEvent(data: { type: string }): SseEvent {
  return { event: data.type, data: JSON.stringify(data) };
}

/** A data-only JSON event (chat, Gemini style). */
export function dataEvent(data: unknown): SseEvent {
  return { data: JSON.stringify(data) };
}
