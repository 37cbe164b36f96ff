/**
 * The observer seam: every request tells its lifecycle (routed, attempt, first byte, usage,
 * ended) once, in order, from one place — for JSON answers, streams and WebSocket responses
 * alike — and relayed streams report the usage their provider sent.
 */
import assert from "node:assert/strict";
import type { Observer, Trace } from "../src/ops/trace.ts";
import { CLIENTS, INGRESS, post, startHarness, wsExchange } from "./helpers.ts";
import { usageFor } from "./mock/upstream.ts";

/** Records each trace's events in order, and the trace itself at its end. */
function recorder() {
  const events = new Map<Trace, string[]>();
  const ended: Trace[] = [];
  const note = (name: string) => (t: Trace) => {
    events.set(t, [...(events.get(t) ?? []), name]);
  };
  const observer: Observer = {
    routed: note("routed"),
    attempt: note("attempt"),
    firstByte: note("firstByte"),
    usage: note("usage"),
    ended(t) {
      note("ended")(t);
      ended.push(t);
    },
  };
  return { observer, events, ended };
}

/** The lifecycle without repeats (usage may be reported more than once). */
const lifecycle = (names: string[]) => names.filter((n, i) => n !== names[i - 1]);

const mock = usageFor(false);

Deno.test("observer: one lifecycle per request, for JSON, streams and WebSocket responses", async (t) => {
  const h = await startHarness();
  const rec = recorder();
  h.gw.observers.push(rec.observer);
  try {
    for (const c of CLIENTS) {
      for (const stream of [false, true]) {
        await t.step(
          `${c.name} relayed ${stream ? "stream" : "json"}: usage and lifecycle`,
          async () => {
            const before = rec.ended.length;
            const res = await post(
              h.url + c.path(c.model, stream),
              c.headers,
              c.body(c.model, stream),
            );
            await res.text();
            assert.equal(rec.ended.length, before + 1, "ended exactly once");
            const trace = rec.ended.at(-1)!;
            // A JSON answer's usage is read before its first byte goes out; a stream's after.
            const expected = stream
              ? ["routed", "attempt", "firstByte", "usage", "ended"]
              : ["routed", "attempt", "usage", "firstByte", "ended"];
            assert.deepEqual(lifecycle(rec.events.get(trace)!), expected);
            assert.equal(trace.mode, "relay");
            assert.equal(trace.status, 200);
            assert.equal(trace.usage?.inputTokens, mock.input, "input tokens");
            assert.equal(trace.usage?.outputTokens, mock.output, "output tokens");
            assert.equal(trace.usage?.cacheReadTokens, mock.cacheRead, "cache reads");
            assert.ok(trace.ttfbMs !== undefined && trace.durationMs! >= trace.ttfbMs);
          },
        );
      }
    }
    await t.step("converted stream and error: the same events", async () => {
      const c = INGRESS[0];
      const res = await post(h.url + c.path("msg-text", true), c.headers, c.body("msg-text", true));
      await res.text();
      const trace = rec.ended.at(-1)!;
      assert.equal(trace.mode, "convert");
      assert.deepEqual(lifecycle(rec.events.get(trace)!), [
        "routed",
        "attempt",
        "firstByte",
        "usage",
        "ended",
      ]);
      const err = await post(
        h.url + c.path("msg-err429", false),
        c.headers,
        c.body("msg-err429", false),
      );
      await err.text();
      const failed = rec.ended.at(-1)!;
      assert.equal(failed.status, 429);
      assert.equal(failed.errorKind, "rate_limit");
      assert.deepEqual(lifecycle(rec.events.get(failed)!), [
        "routed",
        "attempt",
        "firstByte",
        "ended",
      ]);
    });
    await t.step(
      "WebSocket: each response is its own trace, passthrough and converted",
      async () => {
        const before = rec.ended.length;
        await wsExchange(h.url, [
          { type: "response.create", model: "pt-text", input: "hi" },
          { type: "response.create", model: "msg-text", input: "hi", store: false },
        ]);
        // The two responses, then the upgrade (101), which ends when the socket closes.
        for (let i = 0; i < 50 && rec.ended.length < before + 3; i++) {
          await new Promise((r) => setTimeout(r, 10));
        }
        const [relayed, converted, upgrade] = rec.ended.slice(before);
        assert.equal(upgrade.status, 101);
        assert.ok(upgrade.upgrade);
        assert.deepEqual(rec.events.get(upgrade), ["firstByte", "ended"]);
        for (const [trace, mode] of [[relayed, "relay"], [converted, "convert"]] as const) {
          assert.equal(trace.mode, mode);
          assert.equal(trace.status, 200);
          assert.equal(trace.usage?.outputTokens, mock.output);
          assert.deepEqual(lifecycle(rec.events.get(trace)!).filter((e) => e !== "usage"), [
            "routed",
            "attempt",
            "firstByte",
            "ended",
          ]);
        }
      },
    );
  } finally {
    await h.close();
  }
});
