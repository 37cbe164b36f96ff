/**
 * Memory an open stream keeps: nothing of its request. A coding agent's request carries the whole
 * conversation (hundreds of KB) and its answer streams for minutes; a closure that kept the
 * request alive kept its body for as long (a 4 MB body: 4 MB per open stream). Measured in a
 * child process that can force garbage collection (tests/retention_probe.ts).
 */
import assert from "node:assert/strict";

Deno.test("an open stream keeps nothing of its request: a 4 MB body leaves < 1 MB on the heap, relayed and converted", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--v8-flags=--expose-gc",
      "--unstable-no-legacy-abort",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-run",
      new URL("./retention_probe.ts", import.meta.url).pathname,
    ],
    env: { GATEWAY_ACCESS_LOG: "off" },
    stdin: "null",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  const grown: Record<string, number> = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.deepEqual(Object.keys(grown), ["chat-slow", "msg-slow"]);
  for (const [model, bytes] of Object.entries(grown)) {
    assert.ok(
      bytes < 1024 * 1024,
      `${model}: the heap grew by ${bytes} bytes with the stream open`,
    );
  }
});
