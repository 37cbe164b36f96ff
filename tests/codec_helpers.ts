/** Assertions shared by the codec unit tests. */
import assert from "node:assert/strict";
import type { StreamStep } from "../src/kit/codec.ts";
import { GatewayError } from "../src/kit/errors.ts";

/** Asserts `fn` throws a 400 whose message equals (string) or matches (RegExp), and its param. */
export function rejects(fn: () => unknown, message: string | RegExp, param?: string): void {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof GatewayError, String(e));
    assert.equal(e.status, 400);
    if (typeof message === "string") assert.equal(e.message, message);
    else assert.match(e.message, message);
    if (param !== undefined) assert.equal(e.param, param);
    return;
  }
  assert.fail("expected a 400");
}

/** Runs items through a codec's stream step, as a real stream, and collects its output. */
export async function pipe<I, O>(input: NoInfer<I>[], step: StreamStep<I, O>): Promise<O[]> {
  return await Array.fromAsync(ReadableStream.from(input).pipeThrough(new TransformStream(step)));
}
