/** The ending of a cut SSE stream is the client dialect's own text: the core adds nothing. */
import assert from "node:assert/strict";
import type { Dialect } from "../src/contract/format.ts";
import { sseEnd } from "../src/stream_end.ts";
import { sseFraming } from "../src/stream_stage.ts";
import { PLUGINS } from "../plugins/mod.ts";

/** A dialect without an end marker (the Interactions API has none). */
const plain = (message: string) => `event: error\ndata: {"message":${JSON.stringify(message)}}\n\n`;

Deno.test("stream end: a cut SSE stream ends with exactly the dialect's interruption, relayed or converted", () => {
  const own = PLUGINS.flatMap((p) => p.dialect ? [p.dialect] : []);
  const dialects: Dialect[] = [...own, { ...own[0], interruption: plain }];
  for (const dialect of dialects) {
    const own = dialect.interruption("cut");
    assert.equal(sseEnd(dialect).interrupted(true, "cut"), own, dialect.id);
    assert.equal(
      sseFraming((why) => dialect.interruption(why)).interrupted("cut"),
      own,
      dialect.id,
    );
  }
});
