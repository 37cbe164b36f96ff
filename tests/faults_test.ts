/**
 * The fault matrix: every registered client format × every provider of the mock config (one
 * per registered format) × JSON/stream × the upstream faults the mock injects (error statuses
 * with JSON, text and HTML bodies; no headers; no body; stalls; resets and clean closes between
 * and inside events; broken JSON; wrong content type; in-stream errors; huge bodies). Each cell
 * asserts exactly what the client gets: its own dialect's error envelope with the right status,
 * or a well-formed stream that ends either normally, with the provider's own error event, or
 * with its dialect's interruption ending on a fresh event boundary. No cell may leak the
 * provider key (the `echo` faults quote it in every error).
 */
import assert from "node:assert/strict";
import {
  CLIENTS,
  endsInterrupted,
  envelopeMessage,
  googleHeaders,
  type Harness,
  INGRESS,
  type Ingress,
  MOCK_PROVIDERS,
  type MockProvider,
  post,
  PROVIDER_KEY,
  startHarness,
} from "./helpers.ts";
import { GatewayError } from "../src/kit/errors.ts";
import { decodeFrames } from "./mock/eventstream.ts";
import { HUGE_CHARS } from "./mock/scenario.ts";

/** Short timeouts so that `hang`, `silent` and `stall` end quickly. */
const TIMEOUTS = { first_byte_ms: 400, idle_ms: 400 };

/** Every provider of the mock config, one per registered format (tests/formats/<id>.ts). */
const PROVIDERS = MOCK_PROVIDERS;
type Provider = MockProvider;

/** What the client must get. */
type Expect =
  | { kind: "error"; status: (c: Ingress, p: Provider) => number; says?: RegExp }
  | { kind: "interrupted" }
  | { kind: "provider-error" }
  | { kind: "ok"; minChars?: number };

const status = (n: number) => () => n;
/**
/**
 * Anthropic's 529 reaches clients of its wire only (relayed as written; Vertex's Claude clients
 * too: Vertex passes Claude's errors through; Bedrock's have none, theirs is a 503); the mock's
 * other vendors say 503 themselves, and a converted 529 is the client dialect's overload.
 */
const overloaded = (c: Ingress, p: Provider) =>
  p.api === "messages" && c.wire === "messages" && c.dialect.id !== "bedrock" ? 529 : 503;

interface Fault {
  name: string;
  json?: Expect;
  stream?: Expect;
  /** Runs with the default timeouts (the mock takes a while to build a huge reply). */
  patient?: true;
}

const ERROR_FAULTS: Fault[] = [
  ["err429", 429],
  ["err500", 500],
  ["err503", 503],
  ["err400echo", 400],
].map(([name, n]) => {
  const e: Expect = { kind: "error", status: status(n as number) };
  return { name: name as string, json: e, stream: e };
});

const INTERRUPTED: Expect = { kind: "interrupted" };
const BAD_GATEWAY: Expect = { kind: "error", status: status(502) };
const TIMEOUT: Expect = { kind: "error", status: status(504), says: /within 400 ms/ };

const FAULTS: Fault[] = [
  ...ERROR_FAULTS,
  {
    name: "err529",
    json: { kind: "error", status: overloaded },
    stream: { kind: "error", status: overloaded },
  },
  {
    name: "err502htmlecho",
    json: { kind: "error", status: status(502), says: /502 Bad Gateway nginx/ },
    stream: { kind: "error", status: status(502), says: /502 Bad Gateway nginx/ },
  },
  {
    name: "err500textecho",
    json: { kind: "error", status: status(500), says: /upstream connect error/ },
    stream: { kind: "error", status: status(500), says: /upstream connect error/ },
  },
  { name: "hang", json: TIMEOUT, stream: TIMEOUT },
  { name: "silent", json: TIMEOUT, stream: INTERRUPTED },
  { name: "stall", json: TIMEOUT, stream: INTERRUPTED },
  { name: "cut", json: BAD_GATEWAY, stream: INTERRUPTED },
  { name: "cutmid", json: BAD_GATEWAY, stream: INTERRUPTED },
  { name: "close", json: BAD_GATEWAY, stream: INTERRUPTED },
  { name: "closemid", json: BAD_GATEWAY, stream: INTERRUPTED },
  { name: "badjson", json: BAD_GATEWAY, stream: INTERRUPTED },
  { name: "errevent-echo", stream: { kind: "provider-error" } },
  { name: "ctype", json: BAD_GATEWAY, stream: BAD_GATEWAY },
  // A JSON success that quotes the key (every cell checks that no key reached the client). A
  // stream's text comes in deltas that split it: scrubbing works on whole events.
  { name: "okecho", json: { kind: "ok" } },
  {
    name: "huge",
    json: { kind: "ok", minChars: HUGE_CHARS },
    stream: { kind: "ok", minChars: HUGE_CHARS },
    patient: true,
  },
];

/**
 * The message of an error in the client's own envelope — or, from its wire's provider, in that
 * provider's (a Vertex client gets a relayed provider's JSON error as written, as Vertex passes
 * them).
 */
function errorMessage(
  c: Ingress,
  p: Provider,
  body: Record<string, unknown>,
  headers: Headers,
): string {
  const wire = INGRESS.find((i) => i.name === c.wire)!;
  if (p.api !== c.wire || wire === c) return ownMessage(c, body, headers);
  try {
    return ownMessage(c, body, headers);
  } catch {
    return envelopeMessage(wire, body);
  }
}

/** An error in `c`'s own envelope, with the headers its SDKs read it by (Bedrock's). */
function ownMessage(c: Ingress, body: Record<string, unknown>, headers: Headers): string {
  const message = envelopeMessage(c, body);
  const sample = new GatewayError(400, "invalid_request", "");
  for (const [name] of c.dialect.errorHeaders?.(sample) ?? []) {
    assert.ok(headers.has(name), `no ${name} header beside ${JSON.stringify(body)}`);
  }
  return message;
}

/** SSE records, each checked to be whole: every `data:` is JSON or `[DONE]`. */
function strictSse(text: string): { event?: string; data: string }[] {
  const records = text.split(/\r?\n\r?\n/).filter((r) => r.trim() !== "");
  return records.map((record) => {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of record.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trim());
    }
    const joined = data.join("\n");
    if (joined !== "[DONE]") {
      assert.doesNotThrow(() => JSON.parse(joined), `event is not whole JSON: ${record}`);
    }
    return { event, data: joined };
  });
}

const isInterruption = (data: string) => data.includes('"upstream_interrupted"');

/**
 * A binary (AWS event stream) client stream's frames, read by the mock's own decoder, as records:
 * a `chunk`'s Anthropic event by its type (InvokeModel), any other event by its name (Converse),
 * an exception frame as `exception` with its payload.
 */
function frames(bytes: Uint8Array): { event?: string; data: string }[] {
  const decoder = new TextDecoder();
  return decodeFrames(bytes).map(({ headers, payload }) => {
    const data = decoder.decode(payload);
    if (headers[":message-type"] === "exception") return { event: "exception", data };
    if (headers[":event-type"] !== "chunk") return { event: headers[":event-type"], data };
    const event = decoder.decode(Uint8Array.fromBase64(JSON.parse(data).bytes));
    return { event: JSON.parse(event).type, data: event };
  });
}

/** The stream's records, and its text as read (a binary stream's events decoded). */
function records(c: Ingress, bytes: Uint8Array) {
  const events = c.binary ? frames(bytes) : strictSse(new TextDecoder().decode(bytes));
  return { events, text: events.map((e) => `${e.event}: ${e.data}`).join("\n") };
}

/** One cell: what the client got for `fault` on this ingress × provider × mode. */
async function cell(h: Harness, c: Ingress, p: Provider, fault: Fault, stream: boolean) {
  const expect = stream ? fault.stream : fault.json;
  if (!expect) return;
  const model = `${p.prefix}-${fault.name}`;
  const label = `${c.name} ← ${p.api} ${stream ? "stream" : "json"} ${fault.name}`;
  const res = await post(h.url + c.path(model, stream), c.headers, c.body(model, stream));
  const bytes = new Uint8Array(await res.arrayBuffer());
  const read = () => records(c, bytes);
  // A binary stream's events as text (where a key would show); any other answer as it came.
  const text = res.status === 200 && stream && c.binary
    ? read().text
    : new TextDecoder().decode(bytes);
  assert.ok(!text.includes(PROVIDER_KEY), `${label}: the provider key leaked: ${text}`);
  switch (expect.kind) {
    case "error": {
      assert.equal(res.status, expect.status(c, p), `${label}: status (${text.slice(0, 300)})`);
      const message = errorMessage(c, p, JSON.parse(text), res.headers);
      if (expect.says) assert.match(message, expect.says, label);
      assert.doesNotMatch(message, /<[a-z]+>/i, `${label}: no HTML in the message`);
      return;
    }
    case "ok": {
      assert.equal(res.status, 200, `${label}: ${text.slice(0, 300)}`);
      assert.ok(text.length >= (expect.minChars ?? 0), `${label}: body of ${text.length} chars`);
      if (stream) {
        const { events } = read();
        assert.ok(!events.some((e) => isInterruption(e.data)), `${label}: not interrupted`);
      } else JSON.parse(text);
      return;
    }
    case "interrupted": {
      assert.equal(res.status, 200, `${label}: ${text.slice(0, 300)}`);
      const { events } = read();
      if (c.binary) {
        // Bedrock's: one exception frame, the last, saying why.
        const last = events.at(-1);
        assert.equal(last?.event, "exception", `${label}: an exception frame last: ${text}`);
        assert.equal(events.filter((e) => e.event === "exception").length, 1, label);
        assert.ok(JSON.parse(last!.data).message, `${label}: the exception says why`);
        return;
      }
      const data = events.map((e) => e.data);
      assert.ok(endsInterrupted(c, text), `${label}: the dialect's interruption last: ${text}`);
      assert.equal(data.filter(isInterruption).length, 1, `${label}: one interruption`);
      return;
    }
    case "provider-error": {
      assert.equal(res.status, 200, label);
      const { events } = read();
      assert.ok(!events.some((e) => isInterruption(e.data)), `${label}: no extra interruption`);
      assert.ok(
        events.some((e) =>
          /"error"/.test(e.data) || e.event === "error" || e.event === "exception"
        ),
        `${label}: the error event reached the client: ${text}`,
      );
      return;
    }
  }
}

Deno.test("faults: every ingress × provider × mode × fault ends as specified", async (t) => {
  const h = await startHarness({ timeouts: TIMEOUTS });
  const patient = await startHarness();
  try {
    for (const fault of FAULTS) {
      await t.step(fault.name, async () => {
        // A client format's cells of one fault run together: a timeout fault then costs one
        // timeout per format, and the mock is never asked for more than one format's at once
        // (a burst of every cell could outlast the 400 ms first-byte deadline on a busy machine).
        const on = fault.patient ? patient : h;
        const failures: string[] = [];
        for (const c of CLIENTS) {
          const cells = PROVIDERS.flatMap((p) =>
            [false, true].map((stream) => cell(on, c, p, fault, stream))
          );
          for (const r of await Promise.allSettled(cells)) {
            if (r.status === "rejected") failures.push(String(r.reason));
          }
        }
        assert.deepEqual(failures, [], failures.join("\n\n"));
      });
    }
    await t.step("the access log never holds the provider key", () => {
      // The access-log sink is per process: the later harness holds every line.
      const log = JSON.stringify([h.logs, patient.logs]);
      assert.ok(!log.includes(PROVIDER_KEY), "key in the access log");
      assert.ok(log.includes("[redacted]"), "the echoed key was redacted, not dropped");
    });
  } finally {
    await h.close();
    await patient.close();
  }
});

/** Google's streamed JSON array (no `alt=sse`) must stay a parseable array whatever happens. */
Deno.test("faults: a relayed Gemini JSON-array stream always stays parseable", async (t) => {
  const h = await startHarness({ timeouts: TIMEOUTS });
  try {
    for (const fault of ["cut", "cutmid", "closemid", "silent", "stall", "errevent-echo"]) {
      await t.step(fault, async () => {
        const res = await post(
          `${h.url}/v1beta/models/gem-${fault}:streamGenerateContent`,
          googleHeaders(),
          { contents: [{ role: "user", parts: [{ text: "hi" }] }] },
        );
        const text = await res.text();
        assert.ok(!text.includes(PROVIDER_KEY), "no key");
        const array = JSON.parse(text);
        assert.ok(Array.isArray(array), text);
        const errors = array.filter((e: Record<string, unknown>) => e.error);
        assert.equal(errors.length, 1, `exactly one error element: ${text}`);
        const interrupted = errors[0].error.type === "upstream_interrupted";
        assert.equal(interrupted, fault !== "errevent-echo", "provider error, or the interruption");
      });
    }
  } finally {
    await h.close();
  }
});
