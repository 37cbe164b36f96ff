/**
 * Wire plumbing shared by the vendors: events, their framings (SSE with or without `event:`
 * lines, Gemini's CRLF SSE and streamed JSON array, raw bytes), and delivery with the
 * `slow` / `stall` / `cut` timing.
 */
import { type Scenario, STALL_MS } from "./scenario.ts";

export interface WireEvent {
  /** SSE `event:` name; data-only framings and WebSocket frames leave it out. */
  event?: string;
  /** JSON payload, or a string sent verbatim. */
  data: unknown;
  /** Carries a content fragment (text, reasoning, arguments); `cut` and `stall` aim at these. */
  delta?: boolean;
}

/** An event named after its payload's `type` (Responses and Anthropic style). */
export function typed(data: { type: string }, delta = false): WireEvent {
  return { event: data.type, data, delta };
}

/** A data-only event (Chat and Gemini style). */
export function untyped(data: unknown, delta = false): WireEvent {
  return { data, delta };
}

export interface Framing {
  contentType: string;
  /** Text for the SSE and JSON framings, bytes for binary ones (AWS event stream). */
  encode(event: WireEvent, index: number): string | Uint8Array;
  /** Written after the last event of a complete stream (not after a cut). */
  end: string;
}

export const payload = (e: WireEvent) =>
  typeof e.data === "string" ? e.data : JSON.stringify(e.data);

/** OpenAI Chat: bare `data:` records, then `data: [DONE]`. */
export const CHAT_SSE: Framing = {
  contentType: "text/event-stream; charset=utf-8",
  encode: (e) => `data: ${payload(e)}\n\n`,
  end: "data: [DONE]\n\n",
};

/** Responses and Anthropic: `event:` + `data:` records; the terminal event ends the stream. */
export const TYPED_SSE: Framing = {
  contentType: "text/event-stream; charset=utf-8",
  encode: (e) => `event: ${e.event}\ndata: ${payload(e)}\n\n`,
  end: "",
};

/** Gemini `?alt=sse`: `data:` records separated by CRLF, no `[DONE]`. */
export const GEMINI_SSE: Framing = {
  contentType: "text/event-stream",
  encode: (e) => `data: ${payload(e)}\r\n\r\n`,
  end: "",
};

/** Gemini without `alt=sse`: one pretty-printed JSON array, streamed element by element. */
export const GEMINI_ARRAY: Framing = {
  contentType: "application/json; charset=UTF-8",
  encode: (e, i) => (i === 0 ? "[" : "\n,\r\n") + JSON.stringify(e.data, null, 2),
  end: "\n]",
};

/** A body sent in pieces as is (non-streaming replies that are slow, stalled or cut). */
export function rawFraming(contentType: string): Framing {
  return { contentType, encode: (e) => String(e.data), end: "" };
}

/** Resolves after `ms`, or at once when `signal` aborts; the timer never outlives it. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

export type Outcome = "done" | "cut" | "aborted";

/** What a stream sends where a `cut` would stop it, instead of stopping there. */
export interface Faults {
  /** `errevent`: the vendor's in-stream error event, then a clean close. */
  errorEvent?: WireEvent;
  /** `badjson`: that event with its JSON broken, and the stream goes on. */
  badJson?: boolean;
  /** `garbled`: that event's JSON broken inside, `{` … `}` kept, and the stream goes on. */
  garbled?: boolean;
}

/** `e` with a payload that is not JSON though it starts and ends like an object. */
const garbled = (e: WireEvent): WireEvent => ({ ...e, data: `{,${payload(e).slice(1)}` });

/** `e` with its payload's JSON cut in half (the framing around it kept, binary or text). */
const broken = (e: WireEvent): WireEvent => ({
  ...e,
  data: payload(e).slice(0, Math.ceil(payload(e).length / 2)),
});

/**
 * Yields `events` with the scenario's timing and returns how the delivery ended: `cut` stops
 * after the second content fragment (never sending the last event); `stall` waits STALL_MS
 * before the first fragment, `linger` before the first event after the last one (or before the
 * last event, when that is a fragment); `slow` waits between events.
 */
export async function* paced(
  events: WireEvent[],
  scenario: Scenario,
  signal: AbortSignal,
): AsyncGenerator<{ event: WireEvent; index: number }, Outcome> {
  const cutAt = scenario.earlyErr
    ? firstDelta(events)
    : scenario.cut || scenario.errEvent
    ? cutIndex(events)
    : -1;
  const stallAt = scenario.stall
    ? stallIndex(events)
    : scenario.linger
    ? Math.min((deltaIndexes(events).at(-1) ?? 0) + 1, events.length - 1)
    : -1;
  for (let index = 0; index < events.length; index++) {
    if (index === cutAt) return "cut";
    const pause = index === stallAt ? STALL_MS : index > 0 ? scenario.delayMs : 0;
    if (pause) await sleep(pause, signal);
    if (signal.aborted) return "aborted";
    yield { event: events[index], index };
  }
  return "done";
}

/** Sends paced events with `send` (false when the peer is gone). */
export async function deliver(
  events: WireEvent[],
  scenario: Scenario,
  send: (event: WireEvent) => boolean,
  signal: AbortSignal,
): Promise<Outcome> {
  const steps = paced(events, scenario, signal);
  for (let step = await steps.next();; step = await steps.next()) {
    if (step.done) return step.value;
    if (!send(step.value.event)) return "aborted";
  }
}

function deltaIndexes(events: WireEvent[]): number[] {
  return events.flatMap((e, i) => e.delta ? [i] : []);
}

function cutIndex(events: WireEvent[]): number {
  const deltas = deltaIndexes(events);
  const afterSecond = (deltas[Math.min(1, deltas.length - 1)] ?? 0) + 1;
  return Math.min(afterSecond, events.length - 1);
}

function stallIndex(events: WireEvent[]): number {
  return Math.max(1, firstDelta(events));
}

function firstDelta(events: WireEvent[]): number {
  return deltaIndexes(events)[0] ?? 1;
}

/** The error a cut stream ends with; the server's onError recognises and ignores it. */
export const CUT = new Error("mock upstream cut the connection");

export interface StreamHooks {
  /** Aborted when the mock shuts down. */
  closing: AbortSignal;
  /** Called once when the client goes away before the stream is finished. */
  onClientGone(): void;
  /** Registers the delivery so that shutdown can wait for it. */
  track(done: Promise<unknown>): void;
}

/**
 * A response body delivering `events`. It is pulled one event at a time, so everything sent
 * before a cut has been handed to the server when the body errors and the connection drops.
 */
export function streamBody(
  events: WireEvent[],
  framing: Framing,
  scenario: Scenario,
  hooks: StreamHooks,
  faults: Faults = {},
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, hooks.closing]);
  const steps = paced(events, scenario, signal);
  const faultAt = cutIndex(events);
  let finished = false;
  const bytes = (wire: string | Uint8Array) =>
    typeof wire === "string" ? encoder.encode(wire) : wire;
  const text = (event: WireEvent, index: number) => {
    if (faults.garbled && index === faultAt) return framing.encode(garbled(event), index);
    if (faults.badJson && index === faultAt) return framing.encode(broken(event), index);
    return framing.encode(event, index);
  };
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      // `silent`: headers go out, then nothing until the mock shuts down.
      if (scenario.silent) {
        await sleep(STALL_MS, signal);
        if (!finished) controller.close();
        finished = true;
      }
    },
    pull(controller) {
      const step = steps.next().then((result) => {
        if (finished) return; // cancelled meanwhile
        if (!result.done) {
          const { event, index } = result.value;
          return controller.enqueue(bytes(text(event, index)));
        }
        finished = true;
        if (result.value === "cut") {
          if (faults.errorEvent) {
            controller.enqueue(bytes(framing.encode(faults.errorEvent, faultAt)));
            return controller.close();
          }
          if (scenario.cutInside) {
            const next = framing.encode(events[faultAt], faultAt);
            controller.enqueue(bytes(next.slice(0, Math.ceil(next.length / 2))));
          }
          return scenario.cutHow === "close" ? controller.close() : controller.error(CUT);
        }
        if (result.value === "done") controller.enqueue(encoder.encode(framing.end));
        controller.close();
      });
      hooks.track(step);
      return step;
    },
    cancel() {
      if (!finished) {
        finished = true;
        hooks.onClientGone();
      }
      stop.abort();
    },
  }, { highWaterMark: 0 });
}
