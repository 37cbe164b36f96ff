/**
 * A cut answer is counted (docs/limits.md, "A cut answer"): a client reads the text and leaves
 * before the provider's usage event, on every client format of the registry, relayed and
 * converted, and on the Responses WebSocket, relayed and converted. The provider bills what it
 * generated, so the identity's token and spend windows and the token metrics count the usage it
 * had reported by then (Anthropic's input in `message_start`, Gemini's prompt count), the input
 * estimated from the request where it reported none, and the output estimated from the text the
 * client was sent. The mock's `linger` scenario sends the text, then waits for a minute before the
 * events that carry the usage. A converted stream broken by an event whose JSON is broken (the
 * mock's `garbled`) ends with the client's interruption ending and is counted the same way.
 */
import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { CHARS_PER_TOKEN } from "../src/ops/estimate.ts";
import { speaksUpstream, streamText, TEST_FORMATS, type TestFormat } from "./formats.ts";
import {
  endsInterrupted,
  type Harness,
  KEY,
  openaiHeaders,
  startHarness,
  wsExchange,
} from "./helpers.ts";
import { decodeFrames } from "./mock/eventstream.ts";
import { malformedEvent } from "../src/kit/errors.ts";
import { pieces } from "./mock/scenario.ts";
import { members, stringChars } from "../plugins/shared.ts";

/** The text the mock's reply to "hi there" begins with: its first two of three deltas. */
const SENT_TEXT = (vendor: string) => pieces(`Hello from ${vendor} mock: hi there`, 3).slice(0, 2);

/** The registered formats providers speak, each a provider of the mock. */
const PROVIDED = TEST_FORMATS.filter(speaksUpstream);

/** A route per registered client format to a mock provider of its own API: `abort-<id>-*`. */
function abortRoutes(config: Config) {
  // A provider and a route of the mock config, their defaults filled in, as models.
  const mock = config.providers.find((p) => p.base_url)!;
  const plain = config.routes.find((r) => !r.passthrough && !r.model)!;
  const origin = new URL(mock.base_url!).origin;
  for (const f of PROVIDED) {
    const name = `abort-${f.id}`;
    config.providers.push({ ...mock, name, api: f.id, base_url: origin + (f.providerBase ?? "") });
    config.routes.unshift({ ...plain, models: [`${name}-*`], provider: name });
  }
  config.keys[0] = { ...config.keys[0], limits: { tokens_per_day: 1e9, spend_per_month_usd: 1e6 } };
  // One USD per million input tokens, two per million output: spend shows both counts.
  config.prices = [{ models: ["*"], input: 1, output: 2 }];
}

interface Counted {
  tokens: number;
  spend: number;
  /** `gateway_tokens_total` of the key, by type. */
  metrics: { input: number; output: number };
}

async function counted(h: Harness): Promise<Counted> {
  const res = await fetch(`${h.url}/v1/gateway/usage`, { headers: openaiHeaders() });
  const { windows } = await res.json();
  const metrics = { input: 0, output: 0 };
  for (const line of h.gw.metrics.tokens.expose().split("\n")) {
    const m = line.match(/^gateway_tokens_total\{key="team-a",.*type="(input|output)".*\} (\d+)$/);
    if (m) metrics[m[1] as "input" | "output"] += Number(m[2]);
  }
  return { tokens: windows.tokens_per_day.used, spend: windows.spend_per_month_usd.used, metrics };
}

/** The access line that `match` picks, once the request has ended (its trace counted). */
async function accessLine(h: Harness, match: (l: Record<string, unknown>) => boolean) {
  for (let i = 0; i < 150; i++) {
    const line = h.logs.find((l) => l.msg === "access" && match(l));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the cut request was never logged");
}

/** Each (client format, provider format) pair of the registry; relayed when they are one wire. */
const PAIRS = TEST_FORMATS.flatMap((f) =>
  PROVIDED.map((to) => {
    const relayed = to.id === f.plugin.codec.api;
    return { f, to, relayed, label: `${f.id} client, ${relayed ? "relayed" : `from ${to.id}`}` };
  })
);

/**
 * A stream request of `f` for `model`: the client's body with what its mock side adds (chat's
 * `include_usage`, without which a chat stream is converted; Responses' `store: false`, which
 * relays, is the client's own).
 */
function askStream(h: Harness, f: TestFormat, model: string, signal?: AbortSignal) {
  const body = {
    ...f.client.body(model, true) as object,
    ...f.mock?.body?.(model, true) as object,
  };
  return fetch(h.url + f.client.path(model, true), {
    method: "POST",
    headers: f.client.headers(KEY),
    body: JSON.stringify(body),
    signal,
  });
}

/** Reads a stream until `wanted` has all come, then leaves; the response's request id. */
async function readThenLeave(
  h: Harness,
  f: TestFormat,
  model: string,
  wanted: string[],
): Promise<string> {
  const ctrl = new AbortController();
  const res = await askStream(h, f, model, ctrl.signal);
  if (res.status !== 200) throw new Error(`${res.status}: ${await res.text()}`);
  const reader = res.body!.getReader();
  let bytes = new Uint8Array();
  let text = "";
  while (!wanted.every((w) => text.includes(w))) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before the text came: ${text}`);
    bytes = new Uint8Array([...bytes, ...value]);
    text = streamText(f, bytes);
  }
  ctrl.abort();
  await reader.cancel().catch(() => {});
  return res.headers.get("x-gateway-request-id")!;
}

/**
 * What was counted for a cut answer: logged as estimated, input and output above zero (the
 * output at least the text the client saw), and the same in the limit windows, spend and
 * metrics as in the log.
 */
function assertCounted(
  line: Record<string, unknown>,
  before: Counted,
  after: Counted,
  sent: string[],
  upstream: string,
) {
  const input = line.input_tokens as number;
  const output = line.output_tokens as number;
  assert.ok(input > 0, `input counted: ${JSON.stringify(line)}`);
  const seen = Math.ceil(sent.join("").length / CHARS_PER_TOKEN);
  assert.ok(output >= seen, `output ${output} < ${seen}, the text the client saw`);
  // The provider's own input count, sent before any text, is the one counted.
  if (upstream === "messages") assert.equal(input, 11);
  assert.equal(after.tokens - before.tokens, input + output, "tokens_per_day");
  assert.ok(Math.abs(after.spend - before.spend - (input + 2 * output) / 1e6) < 1e-12, "spend");
  assert.deepEqual(
    {
      input: after.metrics.input - before.metrics.input,
      out: after.metrics.output - before.metrics.output,
    },
    { input, out: output },
    "gateway_tokens_total",
  );
  assert.equal(line.usage_estimated, true, "the log says the usage holds estimates");
}

Deno.test("cut usage: a client that reads the text and leaves is counted, every format, relayed and converted", async (t) => {
  const h = await startHarness({ tweak: abortRoutes });
  try {
    for (const { f, to, relayed, label } of PAIRS) {
      await t.step(label, async () => {
        const sent = SENT_TEXT(to.id);
        const before = await counted(h);
        const aborted = h.upstream.aborted;
        const id = await readThenLeave(h, f, `abort-${to.id}-linger`, sent);
        const line = await accessLine(h, (l) => l.request_id === id);
        assert.equal(line.passthrough, relayed);
        assertCounted(line, before, await counted(h), sent, to.id);
        assert.equal(h.upstream.aborted, aborted + 1, "the provider's call was aborted");
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("cut usage: a stream the upstream cuts is counted the same way, every format, relayed and converted", async (t) => {
  const h = await startHarness({ tweak: abortRoutes });
  try {
    for (const { f, to, relayed, label } of PAIRS) {
      await t.step(label, async () => {
        const before = await counted(h);
        const res = await askStream(h, f, `abort-${to.id}-cut`);
        const text = streamText(f, new Uint8Array(await res.arrayBuffer()));
        // The mock cuts after the second of three text deltas.
        const sent = SENT_TEXT(to.id);
        assert.ok(sent.every((s) => text.includes(s)), text);
        const id = res.headers.get("x-gateway-request-id");
        const line = await accessLine(h, (l) => l.request_id === id);
        assert.equal(line.interrupted, true);
        assert.equal(line.passthrough, relayed);
        assertCounted(line, before, await counted(h), sent, to.id);
      });
    }
  } finally {
    await h.close();
  }
});

/**
 * Each client format with each provider format it is converted from (a relay passes the
 * provider's events on as they are: docs/security-and-faults.md).
 */
const CONVERTED = TEST_FORMATS.flatMap((f) =>
  PROVIDED.filter((to) => to.id !== f.plugin.codec.api).map((to) => ({
    f,
    to,
    label: `${f.id} client from ${to.id}`,
  }))
);

/**
 * That the client's stream ends with its format's interruption ending saying `why`, once and
 * nothing else failing: its dialect's SSE ending, or a binary stream's exception frame, last.
 */
function assertInterrupted(f: TestFormat, bytes: Uint8Array, why: string, label: string) {
  if (f.streams.read) {
    const frames = decodeFrames(bytes);
    const exceptions = frames.filter((e) => e.headers[":message-type"] === "exception");
    assert.equal(exceptions.length, 1, `${label}: one exception frame`);
    assert.equal(frames.at(-1), exceptions[0], `${label}: the exception frame last`);
    assert.match(new TextDecoder().decode(exceptions[0].payload), new RegExp(why), label);
    return;
  }
  const text = new TextDecoder().decode(bytes);
  const dialect = f.plugin.dialect!;
  assert.ok(endsInterrupted({ dialect }, text), `${label}: the interruption last: ${text}`);
  const interruptions = (t: string) => t.split("upstream_interrupted").length - 1;
  assert.equal(interruptions(text), interruptions(dialect.interruption(why)), `${label}: ${text}`);
  assert.ok(text.includes(why), `${label}: says why: ${text}`);
}

Deno.test("cut usage: a broken-JSON upstream event ends every converted stream as a cut, counted", async (t) => {
  const h = await startHarness({ tweak: abortRoutes });
  try {
    for (const { f, to, label } of CONVERTED) {
      await t.step(label, async () => {
        const before = await counted(h);
        // The event after the second of three text deltas is sent with its JSON broken inside.
        const res = await askStream(h, f, `abort-${to.id}-garbled`);
        assert.equal(res.status, 200, label);
        const bytes = new Uint8Array(await res.arrayBuffer());
        const sent = SENT_TEXT(to.id);
        const text = streamText(f, bytes);
        assert.ok(sent.every((s) => text.includes(s)), `${label}: the events before it: ${text}`);
        assertInterrupted(f, bytes, malformedEvent().message, label);
        const id = res.headers.get("x-gateway-request-id");
        const line = await accessLine(h, (l) => l.request_id === id);
        assert.equal(line.interrupted, true);
        assertCounted(line, before, await counted(h), sent, to.id);
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("cut usage: a watch counts the output members' string values, not what strings say", () => {
  const names = members(["text", "delta"]);
  assert.equal(stringChars('{"type":"x","delta":"Hello"}', names), 5);
  // Escapes count as the character they stand for; pretty-printed members count too.
  assert.equal(stringChars('{"text" :\n  "a\\"b\\u00e9\\n"}', names), 5);
  // A member name inside a string is text, and a non-string value is not output.
  assert.equal(stringChars('{"other":"say \\"text\\": \\"no\\"","text":{"a":1}}', names), 0);
  assert.equal(stringChars('{"delta":"ab","n":[{"text":"cd"}],"delta":"e"}', names), 5);
  // `first`: one text sent under two names counts once.
  const reasoning = members(["reasoning_content", "reasoning"]);
  assert.equal(stringChars('{"reasoning_content":"abc","reasoning":"abc"}', reasoning, true), 3);
  // A string cut short (an event still arriving) counts to its end.
  assert.equal(stringChars('{"text":"abc', names), 3);
});

/** Sends one `response.create`, reads its frames until `wanted` came, then closes the socket. */
async function wsReadThenLeave(h: Harness, model: string, wanted: string[]) {
  const ws = new WebSocket(h.url.replace(/^http/, "ws") + "/v1/responses", {
    headers: { authorization: `Bearer ${KEY}` },
  });
  let text = "";
  const closed = Promise.withResolvers<void>();
  const timer = setTimeout(() => ws.close(), 10_000);
  ws.onopen = () => ws.send(JSON.stringify({ type: "response.create", model, input: "hi there" }));
  ws.onmessage = (e) => {
    text += e.data;
    if (wanted.every((w) => text.includes(w))) ws.close();
  };
  ws.onerror = () => {};
  ws.onclose = () => closed.resolve();
  await closed.promise;
  clearTimeout(timer);
  assert.ok(wanted.every((w) => text.includes(w)), `the text came before the close: ${text}`);
}

Deno.test("cut usage: a Responses WebSocket client that leaves mid-response is counted, relayed and converted", async (t) => {
  const h = await startHarness({ tweak: abortRoutes });
  try {
    const cases = [
      // A passthrough route: the frame goes to the provider's own socket.
      { label: "relayed (passthrough)", model: "pt-linger", upstream: "responses", relayed: true },
      ...PROVIDED.map((to) => ({
        label: `converted from ${to.id}`,
        model: `abort-${to.id}-linger`,
        upstream: to.id,
        relayed: false,
      })),
    ];
    for (const { label, model, upstream, relayed } of cases) {
      await t.step(label, async () => {
        const sent = SENT_TEXT(upstream);
        const before = await counted(h);
        const from = h.logs.length;
        await wsReadThenLeave(h, model, sent);
        const line = await accessLine(
          h,
          (l) => h.logs.indexOf(l) >= from && l.model === model,
        );
        assert.equal(line.passthrough, relayed);
        assertCounted(line, before, await counted(h), sent, upstream);
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("cut usage: a broken-JSON upstream event ends a converted Responses WebSocket response as a cut, counted", async (t) => {
  const h = await startHarness({ tweak: abortRoutes });
  const why = malformedEvent().message;
  try {
    for (const to of PROVIDED) {
      await t.step(`converted from ${to.id}`, async () => {
        const model = `abort-${to.id}-garbled`;
        const before = await counted(h);
        const from = h.logs.length;
        const [events] = await wsExchange(h.url, [
          { type: "response.create", model, input: "hi there" },
        ]);
        const text = JSON.stringify(events);
        assert.ok(SENT_TEXT(to.id).every((s) => text.includes(s)), `the text before it: ${text}`);
        const last = JSON.stringify(events.at(-1));
        assert.equal(events.at(-1)!.type, "error", `the interruption frame last: ${text}`);
        assert.ok(last.includes("upstream_interrupted") && last.includes(why), last);
        assert.equal(events.filter((e) => e.type === "error").length, 1, text);
        const line = await accessLine(h, (l) => h.logs.indexOf(l) >= from && l.model === model);
        assert.equal(line.interrupted, true);
        assertCounted(line, before, await counted(h), SENT_TEXT(to.id), to.id);
      });
    }
  } finally {
    await h.close();
  }
});
