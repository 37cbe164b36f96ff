/**
 * Responses over WebSocket (`GET /v1/responses` upgrade): each `response.create` frame is
 * answered with the HTTP stream's events, one JSON per text frame, one response at a time.
 */
import { openaiErrorObject, openaiStatus } from "./openai.ts";
import { responses, responseStream, warmupStream } from "./responses.ts";
import { parseScenario } from "./scenario.ts";
import { echoMessage, type ErrorDetail, type Json, replyFor } from "./vendor.ts";
import { deliver, sleep } from "./wire.ts";

/** How long close() waits for the peer's close frame. */
const CLOSE_WAIT_MS = 1000;

/** A request error, wrapped with its HTTP-style status as the WebSocket sends it. */
export function errorFrame(status: number, detail?: ErrorDetail) {
  return {
    type: "error",
    status: openaiStatus(status),
    error: openaiErrorObject(status, "input", detail),
  };
}

export class ResponsesSocket {
  /** Resolves once the socket is closed. */
  readonly closed: Promise<void>;
  #socket: WebSocket;
  #signal: AbortSignal;
  #stop = new AbortController();
  #queue: Promise<void> = Promise.resolve();
  /** The id of the last completed response: the only valid `previous_response_id`. */
  #lastId?: string;

  constructor(
    socket: WebSocket,
    closing: AbortSignal,
    onFrame: (text: string) => void,
    private readonly credential = "",
  ) {
    this.#socket = socket;
    this.#signal = AbortSignal.any([this.#stop.signal, closing]);
    const { promise, resolve } = Promise.withResolvers<void>();
    this.closed = promise;
    socket.onmessage = (e) => {
      if (typeof e.data !== "string") return;
      onFrame(e.data);
      this.#queue = this.#queue.then(() => this.#handle(e.data)).catch(() => {});
    };
    socket.onerror = () => {}; // the close event follows
    socket.onclose = () => {
      this.#stop.abort();
      resolve();
    };
  }

  /** Closes the socket (waiting briefly for the peer) and lets any running response stop. */
  async close(): Promise<void> {
    this.#stop.abort();
    try {
      this.#socket.close(1001, "mock upstream closing");
    } catch {
      // not open yet, or already closing
    }
    const wait = new AbortController();
    await Promise.race([this.closed, sleep(CLOSE_WAIT_MS, wait.signal)]);
    wait.abort();
    await this.#queue;
  }

  #send(data: unknown): boolean {
    if (this.#socket.readyState !== WebSocket.OPEN) return false;
    this.#socket.send(JSON.stringify(data));
    return true;
  }

  async #handle(text: string): Promise<void> {
    let frame: Json;
    try {
      frame = JSON.parse(text);
    } catch {
      this.#send(
        errorFrame(400, { message: "Invalid JSON in WebSocket message.", code: "invalid_json" }),
      );
      return;
    }
    if (frame?.type === "response.processed") return; // acknowledgement, nothing to answer
    if (frame?.type !== "response.create") {
      const message = `Unsupported event type: '${frame?.type}'.`;
      this.#send(errorFrame(400, { message, code: "unknown_event_type", param: "type" }));
      return;
    }
    const previous = frame.previous_response_id;
    if (previous && previous !== this.#lastId) {
      const message = `Previous response with id '${previous}' not found.`;
      const detail = {
        message,
        code: "previous_response_not_found",
        param: "previous_response_id",
      };
      this.#send(errorFrame(400, detail));
      return;
    }
    await this.#create(frame);
  }

  async #create(frame: Json): Promise<void> {
    const model = String(frame.model ?? "");
    const scenario = parseScenario(model);
    if (scenario.error) {
      const echo = scenario.echo ? { message: echoMessage(this.credential) } : undefined;
      this.#send(errorFrame(scenario.error, echo));
      return;
    }
    const warmup = frame.generate === false;
    const { id, events } = warmup
      ? warmupStream(model, frame)
      : responseStream(replyFor(responses, frame, model, scenario), frame);
    const timing = warmup ? parseScenario("") : scenario;
    const outcome = await deliver(events, timing, (e) => this.#send(e.data), this.#signal);
    if (outcome === "done") this.#lastId = id;
    if (outcome === "cut") this.#socket.close(1011, "mock upstream cut the stream");
  }
}
