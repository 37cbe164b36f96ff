/**
 * Run by tests/retention_test.ts under `--v8-flags=--expose-gc`: opens one slow stream at a
 * time through a gateway (the mock provider in a process of its own), relayed (chat → chat)
 * and converted (chat → messages), each with a 4 MB request body, collects garbage while the
 * stream is open, and prints by how many bytes the JS heap grew, per model, as JSON.
 */
import { startMock } from "../bench/processes.ts";
import { setAccessLogSink } from "../src/ops/log.ts";
import { createGateway, createHandler } from "../src/server.ts";
import { FORMATS, mockConfig, openaiHeaders } from "./helpers.ts";

declare const gc: () => void;

const heapUsed = () => {
  gc();
  gc();
  return Deno.memoryUsage().heapUsed;
};

setAccessLogSink(() => {});
// The mock in a process of its own: its copy of each request is not on this heap.
const upstream = await startMock();
const gw = await createGateway(await mockConfig(upstream.url), FORMATS);
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, createHandler(gw));
const grown: Record<string, number> = {};
/** Opens a stream with a `size`-character prompt; returns its reader once the first bytes came. */
async function open(model: string, size: number) {
  // Sent as bytes: the client's own copy stays off the JS heap.
  const body = new TextEncoder().encode(
    JSON.stringify({
      model,
      stream: true,
      messages: [{ role: "user", content: "x".repeat(size) }],
    }),
  );
  const res = await fetch(`http://127.0.0.1:${server.addr.port}/v1/chat/completions`, {
    method: "POST",
    headers: openaiHeaders(),
    body,
  });
  const reader = res.body!.getReader();
  await reader.read();
  return reader;
}

for (const model of ["chat-slow", "msg-slow"]) {
  // A first small stream of each kind: what the first request sets up (code, metric series) stays.
  await (await open(model, 10)).cancel();
  const before = heapUsed();
  const reader = await open(model, 4 * 1024 * 1024);
  grown[model] = heapUsed() - before;
  await reader.cancel();
}
await server.shutdown();
await gw.store.close();
await upstream.stop();
console.log(JSON.stringify(grown));
