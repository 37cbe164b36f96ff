/** The one timer of an upstream call follows the phase in force, whichever way it moves. */
import assert from "node:assert/strict";
import { Deadline } from "../src/request/deadline.ts";
import type { GatewayError } from "../src/kit/errors.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function watched() {
  const fired: string[] = [];
  const d = new Deadline((e: GatewayError) => fired.push(e.message));
  return { d, fired };
}

Deno.test("deadline: a longer new phase waits out its own time, not the old one's", async () => {
  const { d, fired } = watched();
  d.arm(30, "sent no response headers");
  d.arm(200, "went idle");
  await sleep(100);
  assert.deepEqual(fired, [], "the first phase's 30 ms no longer counts");
  await sleep(250);
  assert.deepEqual(fired, ["upstream went idle within 200 ms"]);
});

Deno.test("deadline: a shorter new phase fires on its own time", async () => {
  const { d, fired } = watched();
  d.arm(5_000, "sent no response headers");
  d.arm(20, "went idle");
  await sleep(300);
  assert.deepEqual(fired, ["upstream went idle within 20 ms"]);
});

Deno.test("deadline: activity pushes it back; clear stops it", async () => {
  const { d, fired } = watched();
  d.arm(120, "went idle");
  for (let i = 0; i < 4; i++) {
    await sleep(50);
    d.touch();
  }
  assert.deepEqual(fired, [], "touched every 50 ms, never idle for 120");
  d.clear();
  await sleep(200);
  assert.deepEqual(fired, []);
});
