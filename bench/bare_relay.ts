/**
 * The floor the gateway is measured against: `Deno.serve` that forwards each request to
 * `UPSTREAM` with `fetch` and pipes the response body back, nothing else. With `JS_STAGE=1`
 * the body passes through one minimal JS `ReadableStream` (read a chunk, enqueue it): the floor
 * of any relay that must look at the bytes, as the gateway does.
 */
const upstream = Deno.env.get("UPSTREAM")!;
const jsStage = Deno.env.get("JS_STAGE") === "1";

function passThrough(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
  const url = new URL(req.url);
  const res = await fetch(upstream + url.pathname + url.search, {
    method: req.method,
    headers: req.headers,
    body: req.body,
    signal: req.signal,
  });
  const body = jsStage && res.body ? passThrough(res.body) : res.body;
  return new Response(body, { status: res.status, headers: res.headers });
});
console.log(`bare relay on http://127.0.0.1:${server.addr.port}`);
