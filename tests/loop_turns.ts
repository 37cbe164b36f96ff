/**
 * One turn of a client's tool loop through the gateway (tests/formats.ts `LoopSide`): over HTTP,
 * JSON or stream, or over the Responses WebSocket; the answer read with the format's own codec,
 * and as the client keeps it for its next turn.
 */
import assert from "node:assert/strict";
import type * as ir from "../src/kit/ir.ts";
import type { SseEvent } from "../src/kit/sse.ts";
import { sseFraming } from "../src/request/stream_stage.ts";
import type { TestFormat } from "./formats.ts";
import { KEY, post, type WsEvent, wsExchange } from "./helpers.ts";

const DECODE = { now: 0, id: "matrix" };

/** A client stream's events, as the format's clients divide them. */
function streamEvents(format: TestFormat, bytes: Uint8Array): SseEvent[] {
  const framing = format.streams.read?.() ?? format.plugin.upstream?.framing?.() ?? sseFraming();
  const decoder = new TextDecoder();
  return framing.scan(bytes, 0, (b) => decoder.decode(b)).events;
}

/** The IR answer a format's stream events build (the format's own decoder reads them). */
async function streamAnswer(format: TestFormat, events: SseEvent[]): Promise<ir.Response> {
  const out: ir.StreamEvent[] = [];
  const step = format.plugin.codec.decodeStream(DECODE);
  for (const e of events) await step.transform(e, { enqueue: (x) => out.push(x) });
  const res: ir.Response = { id: "", model: "", created: 0, parts: [], finish: "error" };
  for (const e of out) {
    // The part an event fills: text, thinking or a tool call.
    type Filled = { text: string; arguments: string; signature?: ir.Signature };
    const part = ("index" in e ? res.parts[e.index] : {}) as Filled;
    switch (e.type) {
      case "start":
        res.id = e.id;
        res.model = e.model;
        break;
      case "part_start":
        res.parts[e.index] = e.part.type === "tool_call"
          ? { ...e.part, arguments: "" }
          : e.part.type === "text" || e.part.type === "thinking"
          ? { ...e.part, text: "" }
          : e.part;
        break;
      case "text_delta":
      case "thinking_delta":
        part.text += e.text;
        break;
      case "arguments_delta":
        part.arguments += e.json;
        break;
      case "signature":
        part.signature = e.signature;
        break;
      case "finish":
        res.finish = e.reason;
        res.usage = e.usage;
        break;
      case "error":
        assert.fail(`stream error: ${e.message}`);
    }
  }
  return res;
}

/** One turn over HTTP: the answer in IR, and as the client keeps it (the format's JSON). */
export async function turn(
  format: TestFormat,
  url: string,
  model: string,
  stream: boolean,
  body: unknown,
  /** Headers the client sends besides its key (a session's id). */
  headers: Record<string, string> = {},
) {
  const res = await post(url + format.client.path(model, stream), {
    ...format.client.headers(KEY),
    ...headers,
  }, body);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  assert.equal(res.status, 200, text.slice(0, 400));
  const { codec } = format.plugin;
  if (!stream) {
    const json = JSON.parse(text);
    return { answer: codec.decodeResponse(json, DECODE), kept: json };
  }
  const events = streamEvents(format, bytes);
  const answer = await streamAnswer(format, events);
  const kept = format.loop?.kept?.(events) ??
    codec.encodeResponse(answer, { model }) as Record<string, unknown>;
  return { answer, kept };
}

/** One turn over the Responses WebSocket (a converted stream on every platform route). */
export async function wsTurn(format: TestFormat, url: string, body: Record<string, unknown>) {
  const [events] = await wsExchange(url, [{ ...body, type: "response.create" }]);
  const last: WsEvent = events.at(-1)!;
  assert.equal(last.type, "response.completed", JSON.stringify(last).slice(0, 400));
  const kept = last.response as Record<string, unknown>;
  return { answer: format.plugin.codec.decodeResponse(kept, DECODE), kept };
}

/** One client WebSocket kept open over several turns, as Codex keeps its socket. */
export class WsSession {
  private readonly ws: WebSocket;
  private current: WsEvent[] = [];
  private waiting?: (events: WsEvent[]) => void;
  private readonly opened: Promise<void>;
  private readonly closed: Promise<void>;

  constructor(url: string, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }) {
    this.ws = new WebSocket(url.replace(/^http/, "ws") + "/v1/responses", { headers });
    this.opened = new Promise((resolve, reject) => {
      this.ws.onopen = () => resolve();
      this.ws.onerror = (e) => reject(e);
    });
    this.closed = new Promise((resolve) => (this.ws.onclose = () => resolve()));
    this.ws.onmessage = (e) => {
      const event = JSON.parse(e.data) as WsEvent;
      this.current.push(event);
      if (/^(response\.(completed|incomplete|failed)|error)$/.test(String(event.type))) {
        const done = this.current;
        this.current = [];
        this.waiting?.(done);
      }
    };
  }

  /** One `response.create` frame, answered on this socket. */
  async turn(format: TestFormat, body: Record<string, unknown>) {
    await this.opened;
    const events = new Promise<WsEvent[]>((resolve) => (this.waiting = resolve));
    this.ws.send(JSON.stringify({ ...body, type: "response.create" }));
    const last = (await events).at(-1)!;
    assert.equal(last.type, "response.completed", JSON.stringify(last).slice(0, 400));
    const kept = last.response as Record<string, unknown>;
    return { answer: format.plugin.codec.decodeResponse(kept, DECODE), kept };
  }

  async close(): Promise<void> {
    this.ws.close();
    await this.closed;
  }
}
