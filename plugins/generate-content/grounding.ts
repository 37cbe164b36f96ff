/**
 * Gemini's hosted-tool results live on the candidate, not in its parts: `groundingMetadata`
 * (Google Search: queries, chunks, supports) and `urlContextMetadata` (URL context). Their
 * segment offsets are UTF-8 byte offsets into the candidate's whole answer text; IR citations
 * are character offsets into one text part. Both directions are here.
 */
import type * as ir from "../../src/kit/ir.ts";
import { byteLength, charOffset, citedSpan } from "../hosted.ts";

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObject) : []);
const str = (v: unknown) => (typeof v === "string" ? v : undefined);

/** One answer text part, with where it starts in the candidate's text (in bytes). */
interface TextSpan {
  index: number;
  startByte: number;
  text: string;
}

/** Collects the answer text parts as they stream, so byte offsets can be placed in them. */
export class AnswerText {
  readonly spans: TextSpan[] = [];
  private bytes = 0;

  add(index: number, text: string) {
    let span = this.spans.at(-1);
    if (span?.index !== index) {
      span = { index, startByte: this.bytes, text: "" };
      this.spans.push(span);
    }
    span.text += text;
    this.bytes += byteLength(text);
  }

  get(index: number): TextSpan | undefined {
    return this.spans.find((s) => s.index === index);
  }
}

// ---- upstream: candidate metadata → IR ----

/** IR events for a candidate's grounding: citations on the text parts, then the hosted calls. */
export function decodeGrounding(
  candidate: Obj,
  text: AnswerText,
  id: string,
): { citations: ir.StreamEvent[]; calls: ir.HostedCallPart[] } {
  const citations: ir.StreamEvent[] = [];
  const calls: ir.HostedCallPart[] = [];
  const g = candidate.groundingMetadata;
  if (isObject(g)) {
    const chunks = list(g.groundingChunks).map((c) => (isObject(c.web) ? c.web : {}));
    for (const support of list(g.groundingSupports)) {
      const segment = isObject(support.segment) ? support.segment : {};
      const start = typeof segment.startIndex === "number" ? segment.startIndex : 0;
      const end = typeof segment.endIndex === "number" ? segment.endIndex : start;
      const span = text.spans.findLast((s) => s.startByte <= start);
      if (!span) continue;
      const from = charOffset(span.text, start - span.startByte);
      const to = charOffset(span.text, end - span.startByte);
      const indices = Array.isArray(support.groundingChunkIndices)
        ? support.groundingChunkIndices
        : [];
      for (const i of indices) {
        const web = typeof i === "number" ? chunks[i] : undefined;
        const url = str(web?.uri);
        if (!url) continue;
        const citation: ir.Citation = { url, start: from, end: to };
        const title = str(web?.title);
        if (title) citation.title = title;
        const cited = str(segment.text);
        if (cited) citation.citedText = cited;
        citations.push({ type: "citation", index: span.index, citation });
      }
    }
    const queries = Array.isArray(g.webSearchQueries) ? g.webSearchQueries.map(String) : [];
    if (queries.length || chunks.length) {
      calls.push({
        type: "hosted_call",
        id: `${id}_search`,
        kind: "web_search",
        queries,
        results: chunks.flatMap((w) => {
          const url = str(w.uri);
          const title = str(w.title);
          return url ? [{ url, ...(title && { title }) }] : [];
        }),
      });
    }
  }
  const u = candidate.urlContextMetadata;
  if (isObject(u)) {
    list(u.urlMetadata).forEach((m, n) => {
      const url = str(m.retrievedUrl) ?? "";
      const status = str(m.urlRetrievalStatus);
      const ok = status === undefined || status === "URL_RETRIEVAL_STATUS_SUCCESS";
      calls.push({
        type: "hosted_call",
        id: `${id}_fetch_${n}`,
        kind: "web_fetch",
        url,
        ...(ok ? { results: [{ url }] } : { error: status }),
      });
    });
  }
  return { citations, calls };
}

// ---- ingress: IR → candidate metadata ----

/** Builds `groundingMetadata` / `urlContextMetadata` from the IR answer as it streams. */
export class GroundingBuilder {
  readonly text = new AnswerText();
  private readonly citations: { index: number; citation: ir.Citation }[] = [];
  private readonly calls: ir.HostedCallPart[] = [];

  citation(index: number, citation: ir.Citation) {
    this.citations.push({ index, citation });
  }

  call(part: ir.HostedCallPart) {
    this.calls.push(part);
  }

  /** A whole text part (non-streaming answers). */
  part(index: number, p: ir.TextPart) {
    this.text.add(index, p.text);
    for (const c of p.citations ?? []) this.citation(index, c);
  }

  /** The candidate fields, empty when the answer used no hosted tool. */
  metadata(): Obj {
    const out: Obj = {};
    const searches = this.calls.filter((c) => c.kind === "web_search");
    if (searches.length || this.citations.length) {
      const chunks: Obj[] = [];
      const uri = (i: number) => String((chunks[i].web as Obj).uri);
      const chunkIndex = (url: string, title?: string) => {
        let i = chunks.findIndex((_, j) => uri(j) === url);
        // OpenAI cites its sources with tracking parameters added (`?utm_source=openai`).
        if (i < 0) i = chunks.findIndex((_, j) => uri(j) === url.split("?")[0]);
        if (i < 0) i = chunks.push({ web: { uri: url, title: title ?? url } }) - 1;
        return i;
      };
      for (const c of searches) for (const r of c.results ?? []) chunkIndex(r.url, r.title);
      const supports = this.citations.flatMap(({ index, citation }) => {
        const span = this.text.get(index);
        if (!span) return [];
        const { start, end } = citedSpan(citation, span.text);
        return [{
          segment: {
            startIndex: span.startByte + byteLength(span.text.slice(0, start)),
            endIndex: span.startByte + byteLength(span.text.slice(0, end)),
            text: span.text.slice(start, end),
          },
          groundingChunkIndices: [chunkIndex(citation.url, citation.title)],
        }];
      });
      out.groundingMetadata = {
        webSearchQueries: searches.flatMap((c) => c.queries ?? []),
        groundingChunks: chunks,
        groundingSupports: supports,
      };
    }
    const fetches = this.calls.filter((c) => c.kind === "web_fetch");
    if (fetches.length) {
      out.urlContextMetadata = {
        urlMetadata: fetches.map((c) => ({
          retrievedUrl: c.url ?? c.results?.[0]?.url ?? "",
          urlRetrievalStatus: c.error
            ? "URL_RETRIEVAL_STATUS_ERROR"
            : "URL_RETRIEVAL_STATUS_SUCCESS",
        })),
      };
    }
    return out;
  }
}
