/**
 * Google's streamed JSON array (`[{…}\n,\r\n{…}\n]`), what Gemini clients get without
 * `alt=sse`: the elements are the events. A cut stream still ends as a parseable array, its
 * last element the interruption error.
 */
import type { StreamFraming } from "../../src/kit/generation.ts";
import type { Scan, UpstreamFraming } from "../../src/kit/framing.ts";

/**
 * One stream's array, read (a relayed stream) or written (a converted one): either way it knows
 * whether the array was opened, has elements, or was closed, to end it as a parseable array.
 */
function jsonArrayFraming(): UpstreamFraming {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let opened = false;
  let closed = false;
  let elements = 0;
  let start = -1;
  return {
    mediaType: "application/json",
    scan(buf, from, decode) {
      let cut = 0;
      const events: Scan["events"] = [];
      for (let i = from; i < buf.length; i++) {
        const c = buf[i];
        if (inString) {
          if (escaped) escaped = false;
          else if (c === 0x5c) escaped = true;
          else if (c === 0x22) inString = false;
          continue;
        }
        if (c === 0x22) inString = true;
        else if (c === 0x5b || c === 0x7b) { // [ {
          depth++;
          if (depth === 1 && c === 0x5b) {
            opened = true;
            cut = i + 1;
          } else if (depth === 2) start = i;
        } else if (c === 0x5d || c === 0x7d) { // ] }
          depth--;
          if (depth === 1) {
            events.push({ data: decode(buf.subarray(start, i + 1)) });
            elements++;
            cut = i + 1;
          } else if (depth === 0) {
            closed = true;
            cut = i + 1;
          }
        }
      }
      // Offsets are relative to buf; an element still open keeps its start for the next scan.
      if (start >= 0) start -= cut;
      return { cut, events };
    },
    write(e) {
      const text = (opened ? ",\r\n" : "[") + e.data;
      opened = true;
      elements++;
      return text;
    },
    complete: () => (closed ? "" : opened ? "]" : "[]"),
    interrupted: (why) => {
      if (closed) return "";
      const element = errorElement(why);
      return opened ? `${elements ? ",\r\n" : ""}${element}]` : `[${element}]`;
    },
  };
}

/** Without `alt=sse`, Google streams one JSON array whose elements arrive as they are made. */
export const JSON_ARRAY: StreamFraming = {
  contentType: "application/json; charset=utf-8",
  open: jsonArrayFraming,
};

/** The interruption as the array's last element, in Google's error shape (js-genai raises it). */
function errorElement(why: string): string {
  const error = { code: 502, message: why, status: "UNAVAILABLE", type: "upstream_interrupted" };
  return JSON.stringify({ error });
}
