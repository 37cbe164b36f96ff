/**
 * A stored record as the text every store keeps (in memory, across `workers`, in Redis): three
 * JSON texts on three lines — whose it is (`{"id","owner"}`), the answer as the client received
 * it, and the input the model saw. `JSON.stringify` writes no raw line break, so the lines split
 * unambiguously, and a read of the answer alone (a GET of a stored response or interaction) takes
 * its line as kept, without parsing the input — most of a long chain's record (a GET of a 15 MB
 * record parsed it all: 15 ms of CPU per GET). A record kept before this layout (one JSON object)
 * is still read.
 */
import type { StoredTurn } from "../kit/conversations.ts";

type Obj = Record<string, unknown>;

/** The text a store keeps for `record`. */
export function recordText(record: StoredTurn): string {
  const who = JSON.stringify({ id: record.id, owner: record.owner });
  return `${who}\n${JSON.stringify(record.response)}\n${JSON.stringify(record.input)}`;
}

/** The record a store kept as `text`; undefined if the text is not one. */
export function recordOf(text: string): StoredTurn | undefined {
  const lines = linesOf(text);
  try {
    const r = lines
      ? { ...JSON.parse(lines[0]), response: JSON.parse(lines[1]), input: JSON.parse(lines[2]) }
      : JSON.parse(text);
    return isRecord(r) ? r : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The owner of the record kept as `text` and its answer's JSON text, taken as kept (neither the
 * answer nor the input is parsed); undefined if the text is not a record.
 */
export function answerOf(text: string): { owner: string; answer: string } | undefined {
  const lines = linesOf(text);
  if (!lines) {
    // Kept before this layout: the whole record is parsed, once per read, until it expires.
    const r = recordOf(text);
    return r && { owner: r.owner, answer: JSON.stringify(r.response) };
  }
  const owner = ownerOf(lines[0]);
  const answer = lines[1];
  return owner !== undefined && answer.startsWith("{") && answer.endsWith("}")
    ? { owner, answer }
    : undefined;
}

/** The owner of the record kept as `text` (its input and answer unparsed), if it is one. */
export function recordOwner(text: string): { owner: string } | undefined {
  const lines = linesOf(text);
  const owner = lines ? ownerOf(lines[0]) : recordOf(text)?.owner;
  return owner === undefined ? undefined : { owner };
}

/** The three lines of a record of this layout; undefined for one JSON object (or garbage). */
function linesOf(text: string): [string, string, string] | undefined {
  const first = text.indexOf("\n");
  if (first < 0) return undefined;
  const second = text.indexOf("\n", first + 1);
  if (second < 0) return undefined;
  return [text.slice(0, first), text.slice(first + 1, second), text.slice(second + 1)];
}

function ownerOf(line: string): string | undefined {
  try {
    const who = JSON.parse(line) as Obj | null;
    return typeof who?.owner === "string" && typeof who.id === "string" ? who.owner : undefined;
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is StoredTurn {
  const r = v as Partial<StoredTurn> | null;
  return typeof r === "object" && r !== null && typeof r.id === "string" &&
    typeof r.owner === "string" && Array.isArray(r.input) &&
    typeof r.response === "object" && r.response !== null && !Array.isArray(r.response);
}
