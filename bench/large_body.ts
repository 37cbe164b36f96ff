/**
 * How long large request bodies stall the gateway's event loop (and so every other request on
 * it): by default one ~27 MB chat body with 200,000 messages, converted to Anthropic messages;
 * `concurrent` such requests at once, each of `mb` megabytes. The mock provider runs in its own
 * process, so its parsing is not counted. Prints the longest gap a 1 ms interval saw while the
 * requests went through.
 *
 *   npx -y deno@2.9.6 run -A bench/large_body.ts [model] [messages] [concurrent] [mb]
 */
import { createGateway, createHandler } from "../src/server.ts";
import { setAccessLogSink } from "../src/ops/log.ts";
import { FORMATS, KEY, mockConfig } from "../tests/helpers.ts";

const [model = "msg-text", count = "200000", concurrent = "1", mb = "29"] = Deno.args;
setAccessLogSink(() => {});

const mock = new Deno.Command(Deno.execPath(), {
  args: [
    "eval",
    "--ext=ts",
    `import { startMockUpstream } from "${
      new URL("../tests/mock/upstream.ts", import.meta.url).href
    }"; console.log((await startMockUpstream()).url);`,
  ],
  stdout: "piped",
}).spawn();
const upstream = (await mock.stdout.pipeThrough(new TextDecoderStream()).getReader().read())
  .value!.trim();

const gw = await createGateway(await mockConfig(upstream), FORMATS);
const server = Deno.serve({ port: 0, onListen() {} }, createHandler(gw));
const n = Number(count);
const text = "x".repeat(Math.floor(Number(mb) * 1e6 / n) - 40);
const messages = Array.from({ length: n }, (_, i) => ({
  role: i % 2 ? "assistant" : "user",
  content: text,
}));
messages.push({ role: "user", content: "end" });
const body = JSON.stringify({ model, messages });

let worst = 0;
let last = performance.now();
const lag = setInterval(() => {
  const now = performance.now();
  worst = Math.max(worst, now - last);
  last = now;
}, 1);
const started = performance.now();
const statuses = await Promise.all(
  Array.from({ length: Number(concurrent) }, async () => {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body,
    });
    await res.text();
    return res.status;
  }),
);
const total = performance.now() - started;
clearInterval(lag);
console.log(
  `${model}: ${concurrent} × body ${(body.length / 1e6).toFixed(1)} MB, status ${statuses}, ` +
    `all done in ${total.toFixed(0)} ms, longest event-loop stall ${worst.toFixed(0)} ms`,
);
await server.shutdown();
mock.kill();
await mock.status;
