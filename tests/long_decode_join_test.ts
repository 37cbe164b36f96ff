/**
 * src/request/long_decode.ts on its own: how hops' IR events join into one answer (indices, the part a
 * boundary cut, starts, usage), and that a client leaving while the next hop opens stops there.
 */
import assert from "node:assert/strict";
import type { IrSource } from "../src/kit/codec.ts";
import type * as ir from "../src/kit/ir.ts";
import { continued, type Hops, whole } from "../src/request/long_decode.ts";

const source = (events: ir.StreamEvent[]): IrSource & { cancelled: boolean } => {
  let given = false;
  const s = {
    cancelled: false,
    next: () => {
      const batch = given ? undefined : events;
      given = true;
      return Promise.resolve(batch);
    },
    cancel: () => {
      s.cancelled = true;
      return Promise.resolve();
    },
  };
  return s;
};

const usage = (input: number, output: number): ir.Usage => ({
  inputTokens: input,
  outputTokens: output,
});

/** A hop: `parts` as [kind, text] (a tool call's text is its arguments), then its finish. */
function hop(
  n: number,
  parts: ["text" | "thinking" | "tool_call", string][],
  end: Partial<Extract<ir.StreamEvent, { type: "finish" }>>,
): ir.StreamEvent[] {
  const events: ir.StreamEvent[] = [{ type: "start", id: `r${n}`, model: "m", created: n }];
  parts.forEach(([kind, text], index) => {
    if (kind === "tool_call") {
      events.push(
        { type: "part_start", index, part: { type: "tool_call", id: `c${n}`, name: "f" } },
        { type: "arguments_delta", index, json: text },
      );
    } else {
      events.push(
        { type: "part_start", index, part: { type: kind } },
        { type: kind === "text" ? "text_delta" : "thinking_delta", index, text },
      );
    }
    events.push({ type: "part_stop", index });
  });
  events.push({ type: "finish", reason: "stop", usage: usage(10 * n, n), ...end });
  return events;
}

function hopsOf(later: ir.StreamEvent[][], max = 32, budget?: number) {
  const opened: string[] = [];
  const spent: ir.Usage[] = [];
  const hops: Hops = {
    open(token) {
      opened.push(token);
      return Promise.resolve(source(later[opened.length - 1]));
    },
    max,
    budget,
    spent: (u) => spent.push(u),
  };
  return { hops, opened, spent };
}

async function events(s: IrSource): Promise<ir.StreamEvent[]> {
  const out: ir.StreamEvent[] = [];
  for (let batch; (batch = await s.next()) !== undefined;) out.push(...batch);
  return out;
}

Deno.test("long decode join: one start, indices on, a cut text part goes on, usage summed", async () => {
  const { hops, opened, spent } = hopsOf([
    hop(2, [["text", "B"], ["tool_call", "{}"]], { continuation: "t2", reason: "length" }),
    hop(3, [["thinking", "C"], ["text", "D"]], {}),
  ]);
  const first = source(
    hop(1, [["thinking", "0"], ["text", "A"]], { continuation: "t1", reason: "length" }),
  );
  const out = await events(continued(first, hops));
  assert.deepEqual(opened, ["t1", "t2"]);
  assert.equal(out.filter((e) => e.type === "start").length, 1);
  const starts = out.flatMap((e) => (e.type === "part_start" ? [[e.index, e.part.type]] : []));
  // Hop 2's text goes on as hop 1's part 1; its tool call is part 2; hop 3's parts follow.
  assert.deepEqual(starts, [[0, "thinking"], [1, "text"], [2, "tool_call"], [3, "thinking"], [
    4,
    "text",
  ]]);
  const texts = out.flatMap((e) => (e.type === "text_delta" ? [[e.index, e.text]] : []));
  assert.deepEqual(texts, [[1, "A"], [1, "B"], [4, "D"]]);
  // Every started part stops once, after its last delta.
  const stops = out.flatMap((e) => (e.type === "part_stop" ? [e.index] : []));
  assert.deepEqual(stops, [0, 1, 2, 3, 4]);
  assert.ok(
    out.findIndex((e) => e.type === "part_stop" && e.index === 1) >
      out.findIndex((e) => e.type === "text_delta" && e.text === "B"),
  );
  const finish = out.at(-1)!;
  assert.deepEqual(finish, { type: "finish", reason: "stop", usage: usage(60, 6) });
  assert.deepEqual(spent, [usage(10, 1), usage(30, 3)]);
  // Folded whole, the same answer.
  const again = hopsOf([
    hop(2, [["text", "B"]], {}),
  ]);
  const res = await whole(
    continued(
      source(hop(1, [["text", "A"]], { continuation: "t1", reason: "length" })),
      again.hops,
    ),
  );
  assert.deepEqual(res.parts, [{ type: "text", text: "AB" }]);
  assert.equal(res.continuation, undefined);
  assert.deepEqual(res.usage, usage(30, 3));
});

Deno.test("long decode join: max_hops and the budget stop with the hop's length finish", async () => {
  const cut = { continuation: "t", reason: "length" as const };
  const capped = hopsOf([hop(2, [["text", "B"]], cut)], 2);
  const out = await events(continued(source(hop(1, [["text", "A"]], cut)), capped.hops));
  assert.deepEqual(capped.opened, ["t"]);
  const end = out.at(-1) as Extract<ir.StreamEvent, { type: "finish" }>;
  assert.equal(end.reason, "length");
  assert.equal(end.continuation, undefined, "the token is the gateway's, not the client's");
  // A budget of 1 is spent by the first hop's one output token.
  const spent = hopsOf([hop(2, [["text", "B"]], {})], 32, 1);
  const res = await whole(continued(source(hop(1, [["text", "A"]], cut)), spent.hops));
  assert.deepEqual(spent.opened, []);
  assert.equal(res.finish, "length");
});

Deno.test("long decode join: a client that leaves gets no hop after it", async () => {
  const cut = { continuation: "t1", reason: "length" as const };
  const later = source(hop(2, [["text", "B"]], { continuation: "t2", reason: "length" }));
  const { promise: opening, resolve: open } = Promise.withResolvers<IrSource>();
  const { promise: asked, resolve: ask } = Promise.withResolvers<void>();
  let opens = 0;
  const hops = {
    open: () => {
      opens++;
      ask();
      return opening;
    },
    max: 32,
    spent: () => {},
  };
  // Gone while the next hop opens: the hop that opened meanwhile is cancelled.
  const joined = continued(source(hop(1, [["text", "A"]], cut)), hops);
  await joined.next();
  const reading = joined.next();
  await asked;
  await joined.cancel("gone");
  open(later);
  await assert.rejects(reading);
  assert.ok(later.cancelled);
  assert.equal(opens, 1);
  // Gone at the hop's end: none opens.
  const ended = continued(source(hop(1, [["text", "A"]], cut)), hops);
  await ended.next();
  await ended.cancel("gone");
  await assert.rejects(ended.next());
  assert.equal(opens, 1);
});
