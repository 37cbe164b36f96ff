/** The ending of a cut SSE stream is the client dialect's own text: the core adds nothing. */
import assert from "node:assert/strict";
import type { Dialect } from "../src/kit/format.ts";
import { GatewayError, malformedEvent } from "../src/kit/errors.ts";
import { sseFraming } from "../src/request/stream_stage.ts";
import { PLUGINS } from "../plugins/mod.ts";

/** A dialect without an end marker (the Interactions API has none). */
const plain = (message: string) => `event: error\ndata: {"message":${JSON.stringify(message)}}\n\n`;

// Relayed and converted SSE streams end through the same framing (src/request/answer.ts, relay_attempt.ts).
Deno.test("stream end: a cut SSE stream ends with exactly the dialect's interruption, relayed or converted", () => {
  const own = PLUGINS.flatMap((p) => p.dialect ? [p.dialect] : []);
  const dialects: Dialect[] = [...own, { ...own[0], interruption: plain }];
  for (const dialect of dialects) {
    const own = dialect.interruption("cut");
    assert.equal(
      sseFraming((why) => dialect.interruption(why)).interrupted("cut"),
      own,
      dialect.id,
    );
  }
});

// A converted stream ends the same way when an event cannot be read (src/request/client_stream.ts).
Deno.test("stream end: every format's stream decoder throws malformedEvent for an event that is not a JSON object", () => {
  const decoders = PLUGINS.filter((p) => p.upstream !== undefined);
  assert.ok(decoders.length >= 6, "every format providers speak");
  for (const { id, codec } of decoders) {
    for (const data of ["null", "5", "[1]", "not json", '{"type":"ping",}', '{"a":1}}']) {
      const step = codec.decodeStream({ now: 0, id: "gw_1" });
      assert.throws(
        () => step.transform({ event: "ping", data }, { enqueue: () => {} }),
        (e: Error) => e instanceof GatewayError && e.message === malformedEvent().message,
        `${id}: ${data}`,
      );
    }
  }
});
