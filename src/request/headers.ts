/**
 * Headers of the core's answers: allow-lists picked from a provider's answer (retry hints only
 * well-formed, values scrubbed of keys), and responses built with their headers set once.
 */
import type { UpstreamFraming } from "../kit/framing.ts";
import { type HeaderPairs, STREAM_HEADERS } from "../kit/http.ts";
import type { Secrets } from "../ops/secrets.ts";

/**
 * The headers whose names are listed, or start with a listed prefix ending in `-`, as pairs: set
 * once where they end up (`respond`, `headersFrom`), with no intermediate `Headers` to copy them
 * through. From a request's pairs read once, or a `Headers` (`forEach`, not `for…of`: Deno's
 * header iterator is dearer on the JSON path, docs/performance.md).
 */
export function pickHeaders(from: Headers | HeaderPairs, allow: readonly string[]): HeaderPairs {
  const list = compiled(allow);
  const out: HeaderPairs = [];
  if (Array.isArray(from)) {
    for (const pair of from) if (allows(list, pair[0])) out.push(pair);
  } else {
    from.forEach((v, k) => {
      if (allows(list, k)) out.push([k, v]);
    });
  }
  return out;
}

/** An allow-list split into names and prefixes (fixed at startup: split once). */
interface AllowList {
  names: Set<string>;
  prefixes: string[];
}

/** Whether the list allows `name`: a plain loop, no closure made per header read. */
function allows({ names, prefixes }: AllowList, name: string): boolean {
  if (names.has(name)) return true;
  for (const p of prefixes) if (name.startsWith(p)) return true;
  return false;
}

const compiledLists = new WeakMap<readonly string[], AllowList>();

function compiled(allow: readonly string[]): AllowList {
  let c = compiledLists.get(allow);
  if (!c) {
    c = {
      names: new Set(allow.filter((a) => !a.endsWith("-"))),
      prefixes: allow.filter((a) => a.endsWith("-")),
    };
    compiledLists.set(allow, c);
  }
  return c;
}

/**
 * Sets each pair on `headers` and returns it. Deno converts a `headers` init (pairs, a record or a
 * `Headers`) through WebIDL's generic sequence conversion, several times dearer than `set`
 * (docs/performance.md). Names must be distinct: a later pair replaces an earlier one.
 */
function setAll(headers: Headers, pairs: Iterable<readonly [string, string]>): Headers {
  for (const [name, value] of pairs) headers.set(name, value);
  return headers;
}

/** A response with these headers, set once it is built rather than passed in its init. */
export function respond(
  body: BodyInit | null,
  status: number,
  headers: Iterable<readonly [string, string]>,
): Response {
  const res = new Response(body, { status });
  setAll(res.headers, headers);
  return res;
}

/** `Headers` holding these pairs, set one by one rather than passed to its constructor. */
export const headersFrom = (pairs: HeaderPairs = []): Headers => setAll(new Headers(), pairs);

export const RETRY_HEADERS = ["retry-after", "retry-after-ms", "x-should-retry"] as const;

/**
 * A relayed answer with the provider's headers. A stream (`framing`) keeps the provider's own
 * content type (it need not be SSE) unless its framing re-frames it; the stream headers fill
 * in the rest.
 */
export function respondRelayed(
  body: BodyInit,
  status: number,
  headers: Iterable<readonly [string, string]>,
  framing: Pick<UpstreamFraming, "relayedType"> | undefined,
): Response {
  const res = respond(body, status, headers);
  if (!framing) return res;
  for (const [k, v] of Object.entries(STREAM_HEADERS)) {
    if (!res.headers.has(k)) res.headers.set(k, v);
  }
  if (framing.relayedType) res.headers.set("content-type", framing.relayedType);
  res.headers.set("x-accel-buffering", "no");
  return res;
}

/** Retry hints a client's SDK acts on: relayed only in the form it expects. */
const WELL_FORMED: Record<string, RegExp> = {
  // Seconds, or an HTTP date (IMF-fixdate), as RFC 9110 has it.
  "retry-after": /^(\d+|[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)$/,
  "retry-after-ms": /^\d+(\.\d+)?$/,
  "x-should-retry": /^(true|false)$/,
};

/**
 * The provider's response headers a client sees: the allow-listed ones, values scrubbed of keys
 * (a proxy may echo the credential into a request id), retry hints dropped unless well-formed.
 */
export function upstreamHeaders(
  res: Response,
  allow: readonly string[],
  secrets: Secrets,
): HeaderPairs {
  const out: HeaderPairs = [];
  let values = "";
  for (const pair of pickHeaders(res.headers, allow)) {
    if (!(WELL_FORMED[pair[0]]?.test(pair[1]) ?? true)) continue;
    out.push(pair);
    values += pair[1] + "\n";
  }
  // One search over all the values: they almost never hold a key.
  if (!secrets.found(values)) return out;
  return out.map(([name, value]) => [name, secrets.scrub(value)]);
}

/** The media type of a whole JSON body; a stream's is its format's (`text/event-stream`). */
export const JSON_TYPE = "application/json";

/** The content type of an answer that is not `mediaType` (lowercased, "" for none), if it is not. */
export function unexpectedContentType(headers: Headers, mediaType: string): string | undefined {
  const type = headers.get("content-type")?.toLowerCase() ?? "";
  const ok = mediaType === JSON_TYPE ? /[/+]json\b/.test(type) : type.startsWith(mediaType);
  return ok ? undefined : type;
}
