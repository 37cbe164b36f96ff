/**
 * The opening of an upstream stream, held back until it shows content: until then nothing has
 * reached the client, so a failure may still go to another target.
 */
import type { StreamStep } from "../kit/codec.ts";
import { GatewayError } from "../kit/errors.ts";
import type * as ir from "../kit/ir.ts";
import type { SseEvent } from "../kit/sse.ts";
import { ProviderFailure } from "./failover.ts";
import type { EventReader } from "./upstream_events.ts";

/** Opening events held back at most, so an error right after them can still fail over. */
const HOLD_EVENTS = 32;

/** An event that shows the client something (an opening `start` or empty part does not). */
function isContent(e: ir.StreamEvent): boolean {
  if (e.type === "start" || e.type === "usage" || e.type === "signature") return false;
  return !(e.type === "part_start" && (e.part.type === "text" || e.part.type === "thinking"));
}

/** A source of stream batches (upstream events, or IR events). */
interface BatchSource<B> {
  next(): Promise<B | undefined>;
  cancel(reason: unknown): Promise<void>;
}

/**
 * Reads a stream's opening batches until one carries content (or HOLD_EVENTS events went by;
 * the reader's first-byte deadline bounds the wait). An error event or an end before any
 * content fails the attempt, so nothing has reached the client and another target may answer.
 * Returns the source with the held batches put back in front.
 */
export async function holdOpening<B>(
  source: BatchSource<B>,
  toIr: (batch: B) => Promise<ir.StreamEvent[]>,
): Promise<BatchSource<B>> {
  const held: B[] = [];
  let seen = 0;
  try {
    for (let open = true; open && seen < HOLD_EVENTS;) {
      const batch = await source.next();
      if (batch === undefined) {
        throw new GatewayError(
          502,
          "upstream",
          "the upstream closed the stream before any content",
        );
      }
      for (const e of await toIr(batch)) {
        seen++;
        if (e.type === "error") {
          const err = new GatewayError(e.status, e.kind, e.message);
          throw new ProviderFailure(err);
        }
        if (isContent(e)) {
          open = false;
          break;
        }
      }
      held.push(batch);
    }
  } catch (e) {
    await source.cancel(e);
    throw e;
  }
  return {
    next: () => held.length ? Promise.resolve(held.shift()) : source.next(),
    cancel: (reason) => source.cancel(reason),
  };
}

/**
 * A relayed stream with its opening held back; its events are decoded to IR (only while held)
 * to tell an opening from content or an error.
 */
export function holdRelayedOpening(
  reader: EventReader,
  decoder: StreamStep<SseEvent, ir.StreamEvent>,
): Promise<Pick<EventReader, "next" | "cancel">> {
  return holdOpening(reader, async (batch) => {
    const out: ir.StreamEvent[] = [];
    const emit = { enqueue: (e: ir.StreamEvent) => out.push(e) };
    for (const e of batch.events) {
      try {
        await decoder.transform(e, emit);
      } catch {
        // Relayed as is: what the decoder cannot read counts as content, the client's to judge.
        out.push({ type: "text_delta", index: 0, text: "" });
      }
    }
    return out;
  });
}
