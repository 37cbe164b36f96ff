/**
 * Deno's built-in OpenTelemetry (`OTEL_DENO=true`, see docs/metrics.md): the request span Deno
 * opens for each request gets the GenAI attributes, and loses the query string of its URL
 * attributes. Without OTEL_DENO there is no active span and all of this does nothing.
 */
import { genAiProvider, type GenAiSystems } from "./metrics.ts";
import type { Observer, Trace } from "./trace.ts";

/** Where `@opentelemetry/api` keeps the span in a context (Deno's context manager shares it). */
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");

interface Span {
  setAttribute(key: string, value: string | number | boolean): unknown;
}

/**
 * Whether Deno exports telemetry (it reads `OTEL_DENO` at startup, "true" or "1"). Without it no
 * span is ever active, and asking for one on every request shows on throughput
 * (docs/performance.md).
 */
export function otelEnabled(): boolean {
  try {
    return /^(true|1)$/i.test(Deno.env.get("OTEL_DENO") ?? "");
  } catch {
    return false; // no env permission: Deno's own reading of it was not ours to see
  }
}

function activeSpan(): Span | undefined {
  return Deno.telemetry.contextManager.active()?.getValue(SPAN_KEY) as Span | undefined;
}

/**
 * Deno records the full URL, query included, on the request span before any handler runs. A
 * query may carry a credential under any name (Gemini clients send `?key=`, others `?api_key=`
 * or `?token=`), so the whole of it is overwritten: `url.full` without it, `url.query` empty.
 */
export function dropSpanQuery(url: URL): void {
  if (!url.search) return;
  const span = activeSpan();
  if (!span) return;
  span.setAttribute("url.full", url.origin + url.pathname);
  span.setAttribute("url.query", "");
}

/** Puts the GenAI attributes of each request on its span (OpenTelemetry's GenAI names). */
export function spanAttributes(systems: GenAiSystems): Observer {
  // Taken while the request's handler runs: a stream's later events happen outside it.
  const spans = new WeakMap<Trace, Span>();
  return {
    routed(t) {
      const span = activeSpan();
      const operation = t.operation;
      if (!span || !operation || !t.api) return;
      spans.set(t, span);
      span.setAttribute("gen_ai.operation.name", operation);
      span.setAttribute("gen_ai.provider.name", genAiProvider(systems, t.platform ?? t.api));
      if (t.model) span.setAttribute("gen_ai.request.model", t.model);
    },
    usage(t) {
      const span = spans.get(t);
      if (!span || !t.usage) return;
      span.setAttribute("gen_ai.usage.input_tokens", t.usage.inputTokens);
      span.setAttribute("gen_ai.usage.output_tokens", t.usage.outputTokens);
    },
    ended(t) {
      const span = spans.get(t) ?? activeSpan();
      if (!span) return;
      if (t.key) span.setAttribute("gateway.key", t.key);
      if (t.sessionId) span.setAttribute("gen_ai.conversation.id", t.sessionId);
      if (t.errorKind) span.setAttribute("error.type", t.errorKind);
    },
  };
}
