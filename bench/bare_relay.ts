/**
 * The floor the gateway is measured against: `Deno.serve` that forwards each request to
 * `UPSTREAM` with `fetch` and pipes the response body back, nothing else. With `JS_FLOOR=1` it
 * does the least any gateway must do in JavaScript: it reads and parses the request (the model
 * routes it), reads and parses a JSON answer whole (its usage is logged), and passes a stream
 * through one minimal JS `ReadableStream` (read a chunk, enqueue it).
 */
const upstream = Deno.env.get("UPSTREAM")!;
const jsFloor = Deno.env.get("JS_FLOOR") === "1";

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

/** The JS floor: the request parsed, a JSON answer read and parsed, a stream one JS stage. */
async function relayInJs(req: Request, url: URL): Promise<Response> {
  const text = await req.text();
  const { stream } = JSON.parse(text);
  const res = await fetch(upstream + url.pathname + url.search, {
    method: req.method,
    headers: req.headers,
    body: text,
    signal: req.signal,
  });
  if (stream) return new Response(passThrough(res.body!), res);
  const bytes = await res.bytes();
  JSON.parse(new TextDecoder().decode(bytes));
  return new Response(bytes, res);
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
  const url = new URL(req.url);
  if (jsFloor) return await relayInJs(req, url);
  const res = await fetch(upstream + url.pathname + url.search, {
    method: req.method,
    headers: req.headers,
    body: req.body,
    signal: req.signal,
  });
  return new Response(res.body, { status: res.status, headers: res.headers });
});
console.log(`bare relay on http://127.0.0.1:${server.addr.port}`);
