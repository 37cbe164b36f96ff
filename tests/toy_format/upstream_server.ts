/**
 * A toy provider for tests (not part of the plugin): speaks the toy wire format byte for byte,
 * checks every request's HMAC signature on its own, and records whether a raw key ever
 * arrived. Words in the model pick the scenario: `busy` fails with a toy fault (HTTP 500),
 * `cut` stops streaming before the done line (leaving half a line behind), `garbled` sends a
 * line that is not JSON after the first delta.
 */
import { createHash, createHmac } from "node:crypto";

export interface ToyUpstream {
  url: string;
  /** Bodies of the requests whose signature checked out. */
  verified: string[];
  /** Requests refused for a bad or missing signature. */
  rejected: number;
  /** Whether any request header carried the raw key. */
  keyLeaked: boolean;
  /** The exact bytes of every answer sent, in order. */
  sent: string[];
  close(): Promise<void>;
}

export const TOY_OUTPUT = ["Hello", " from", " toy"];
export const TOY_TOKENS = { in: 7, out: 3 };

const line = (o: unknown) => JSON.stringify(o) + "\n";

export function startToyUpstream(key: string): ToyUpstream {
  const up: ToyUpstream = {
    url: "",
    verified: [],
    rejected: 0,
    keyLeaked: false,
    sent: [],
    close: () => Promise.resolve(),
  };
  const answer = (text: string, status: number, type: string) => {
    up.sent.push(text);
    return new Response(text, { status, headers: { "content-type": type } });
  };
  const fault = (status: number, kind: string, text: string) =>
    answer(JSON.stringify({ fault: { kind, text } }), status, "application/json");

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    for (const [, v] of req.headers) if (v.includes(key)) up.keyLeaked = true;
    const path = new URL(req.url).pathname;
    if (req.method !== "POST" || path !== "/toy/v1/generate") {
      return fault(404, "not_found", `no ${req.method} ${path}`);
    }
    const date = req.headers.get("x-toy-date") ?? "";
    const digest = createHash("sha256").update(body).digest("hex");
    const expected = createHmac("sha256", key)
      .update(`${req.method}\n${path}\n${digest}\n${date}`)
      .digest("hex");
    if (!/^\d{8}T\d{6}Z$/.test(date) || req.headers.get("x-toy-signature") !== expected) {
      up.rejected++;
      return fault(401, "authentication", "bad signature");
    }
    up.verified.push(body);
    const { model, stream } = JSON.parse(body);
    if (model.includes("busy")) return fault(500, "busy", "the toy is busy");
    if (!stream) {
      const id = "toy-1";
      const done = { id, model, output: TOY_OUTPUT.join(""), stop: "done", tokens: TOY_TOKENS };
      return answer(JSON.stringify(done), 200, "application/json");
    }
    const deltas = TOY_OUTPUT.map((delta) => ({ delta }));
    const chunks = model.includes("cut")
      ? [...deltas.slice(0, 2).map(line), '{"delta":"tr'] // the connection ends mid-line
      : model.includes("garbled")
      ? [line(deltas[0]), "<html>proxy error</html>\n", ...deltas.slice(1).map(line)]
      : [...deltas, { done: true, stop: "done", tokens: TOY_TOKENS }].map(line);
    up.sent.push(chunks.join(""));
    // One chunk per line, as a provider generates them.
    const encoder = new TextEncoder();
    const piecewise = ReadableStream.from(chunks.map((c) => encoder.encode(c)));
    return new Response(piecewise, { headers: { "content-type": "application/x-ndjson" } });
  });
  up.url = `http://127.0.0.1:${server.addr.port}`;
  up.close = () => server.shutdown();
  return up;
}
