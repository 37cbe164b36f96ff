/**
 * The toy format's codec: text only. A request is one `prompt`; a response one `output`, its
 * `stop` and `tokens`; a stream `{"delta"}` lines then one `{"done": true, …}` line (or a
 * `{"fault"}` line).
 */
import type { Codec, DecodeContext, Emit, StreamStep, StreamWatch } from "../../src/kit/codec.ts";
import { type ErrorKind, GatewayError, malformedEvent, unsupported } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import type { SseEvent } from "../../src/kit/sse.ts";

type Obj = Record<string, unknown>;

const STOP: Record<ir.FinishReason, string> = {
  stop: "done",
  length: "length",
  tool_calls: "tool_calls",
  content_filter: "filtered",
  pause: "pause",
  error: "error",
};
const FINISH = Object.fromEntries(Object.entries(STOP).map(([k, v]) => [v, k])) as Record<
  string,
  ir.FinishReason
>;

/** Fault kinds of toy providers that are not the gateway's own kind names. */
const FAULT_KIND: Record<string, ErrorKind> = { busy: "overloaded" };

export const faultKind = (kind: unknown): ErrorKind | undefined =>
  typeof kind === "string" ? FAULT_KIND[kind] : undefined;

const tokensOf = (u: ir.Usage | undefined) => ({
  in: u?.inputTokens ?? 0,
  out: u?.outputTokens ?? 0,
});

function usageOf(tokens: unknown): ir.Usage | undefined {
  const t = tokens as { in?: unknown; out?: unknown } | undefined;
  if (typeof t?.in !== "number" || typeof t.out !== "number") return undefined;
  return { inputTokens: t.in, outputTokens: t.out };
}

const badUpstream = (why: string) => new GatewayError(502, "upstream", `toy upstream: ${why}`);

// ---- ingress ----

function decodeRequest(body: Obj, model: string): ir.Request {
  return {
    model,
    system: [],
    messages: [{ role: "user", parts: [{ type: "text", text: body.prompt as string }] }],
    ...(typeof body.max_tokens === "number" && { maxTokens: body.max_tokens }),
    stream: body.stream === true,
  };
}

function encodeResponse(res: ir.Response, ctx: { model: string }): Obj {
  return {
    id: res.id,
    model: ctx.model,
    output: res.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join(""),
    stop: STOP[res.finish],
    tokens: tokensOf(res.usage),
  };
}

function encodeStream(): StreamStep<ir.StreamEvent, SseEvent> {
  // Usage may come early (Anthropic's input count at the start); the done line carries it.
  let usage: ir.Usage | undefined;
  const line = (o: Obj) => ({ data: JSON.stringify(o) });
  return {
    transform(e, out) {
      if (e.type === "start" || e.type === "usage") usage = e.usage ?? usage;
      else if (e.type === "text_delta") out.enqueue(line({ delta: e.text }));
      else if (e.type === "finish") {
        out.enqueue(line({ done: true, stop: STOP[e.reason], tokens: tokensOf(e.usage ?? usage) }));
      } else if (e.type === "error") {
        out.enqueue(line({ fault: { kind: e.kind, text: e.message, status: e.status } }));
      }
    },
  };
}

// ---- upstream ----

/** Only text can be said to a toy provider; everything else is refused, never dropped. */
function encodeRequest(req: ir.Request, ctx: { model: string; route: string }): Obj {
  if (req.tools?.length) throw unsupported("tools", ctx.route);
  const texts = [...req.system, ...req.messages.flatMap((m) => m.parts)].map((p) => {
    if (p.type !== "text") throw unsupported(p.type, ctx.route, `${p.type} parts cannot be sent`);
    return p.text;
  });
  return {
    model: ctx.model,
    prompt: texts.join("\n\n"),
    ...(req.stream && { stream: true }),
    ...(req.maxTokens !== undefined && { max_tokens: req.maxTokens }),
  };
}

function decodeResponse(body: Obj, ctx: DecodeContext): ir.Response {
  if (typeof body.output !== "string") throw badUpstream("response without `output`");
  const usage = usageOf(body.tokens);
  return {
    id: typeof body.id === "string" ? body.id : ctx.id,
    model: typeof body.model === "string" ? body.model : "",
    created: ctx.now,
    parts: [{ type: "text", text: body.output }],
    finish: FINISH[body.stop as string] ?? "stop",
    ...(usage && { usage }),
  };
}

function decodeStream(ctx: DecodeContext): StreamStep<SseEvent, ir.StreamEvent> {
  let started = false;
  let open = false;
  let ended = false;
  const fail = (out: Emit<ir.StreamEvent>, status: number, kind: ErrorKind, message: string) => {
    ended = true;
    out.enqueue({ type: "error", status, kind, message });
  };
  return {
    transform(e, out) {
      if (ended) return;
      if (!started) {
        started = true;
        out.enqueue({ type: "start", id: ctx.id, model: "", created: ctx.now });
      }
      let line: Obj;
      try {
        line = JSON.parse(e.data);
      } catch {
        throw malformedEvent(); // the core ends the client's stream with its interruption
      }
      if (typeof line.delta === "string") {
        if (!open) out.enqueue({ type: "part_start", index: 0, part: { type: "text" } });
        open = true;
        out.enqueue({ type: "text_delta", index: 0, text: line.delta });
      } else if (line.done === true) {
        ended = true;
        if (open) out.enqueue({ type: "part_stop", index: 0 });
        const usage = usageOf(line.tokens);
        const reason = FINISH[line.stop as string] ?? "stop";
        out.enqueue(usage ? { type: "finish", reason, usage } : { type: "finish", reason });
      } else if (line.fault) {
        const f = line.fault as { kind?: string; text?: unknown; status?: unknown };
        const status = typeof f.status === "number" ? f.status : 502;
        fail(out, status, faultKind(f.kind) ?? "upstream", String(f.text ?? "toy upstream fault"));
      }
    },
  };
}

const DONE = /^\{\s*"done"\s*:\s*true/;
const FAULT = /^\{\s*"fault"\s*:/;

const DELTA = /^\{\s*"delta"\s*:\s*"/;

function deltaOf(line: string): string {
  try {
    return String(JSON.parse(line).delta);
  } catch {
    return ""; // the decoder reports a broken line
  }
}

/**
 * A relayed toy stream ends at its done line (which carries the usage) or a fault line; its
 * output is its delta lines' text.
 */
function watch(): StreamWatch {
  let done: string | undefined;
  let output = 0;
  return {
    inspect(e) {
      if (DELTA.test(e.data)) output += deltaOf(e.data).length;
      if (DONE.test(e.data)) done = e.data;
      return done !== undefined || FAULT.test(e.data);
    },
    usageEvents: () => done === undefined ? [] : [done],
    output: () => output,
  };
}

export const toyCodec: Codec = {
  api: "toy",
  decodeRequest,
  encodeResponse,
  encodeStream,
  path: () => "/toy/v1/generate",
  encodeRequest,
  decodeResponse,
  usage: ({ json }) => usageOf(json.at(-1)?.tokens),
  decodeStream,
  watch,
};
