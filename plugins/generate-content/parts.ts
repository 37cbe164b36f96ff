/** Pieces shared by the request, response and stream mappings of the Gemini format. */
import type * as ir from "../../src/kit/ir.ts";
import { readSignature } from "../../src/kit/signature.ts";
import { carryMarked, readMarked, REDACTED } from "../shared.ts";

export const FAMILY: ir.Family = "gemini";

// ---- tool-call ids ----

/**
 * Ids minted by this gateway (`call_…`) or by another vendor (`call_…`, `fc_…`, `toolu_…`).
 * Gemini never issues these, and its own ids are the only ones it should see back.
 */
const FOREIGN_ID = /^(call|fc|toolu)_/;

/** The id to send to Gemini, or undefined when the id is not Gemini's own. */
export const geminiId = (id: string): string | undefined => FOREIGN_ID.test(id) ? undefined : id;

/** A stable id for the n-th id-less function call of a Gemini response. */
export const responseCallId = (responseId: string, n: number): string =>
  `call_${responseId.replace(/[^A-Za-z0-9_-]/g, "_")}_${n}`;

// ---- media ----

/** OpenAI `input_audio.format` names to Gemini audio MIME types and back. */
export const audioMime = (format: string) => `audio/${format}`;

export function audioFormat(mime: string): string {
  const sub = mime.slice("audio/".length).toLowerCase();
  if (sub === "mpeg" || sub === "mp3") return "mp3";
  if (sub === "x-wav" || sub === "wave") return "wav";
  return sub;
}

// ---- thinking ----

/**
 * Redacted thinking (Anthropic `redacted_thinking`, OpenAI encrypted reasoning) has no Gemini
 * form: it rides in a thought part's signature slot, marked `redacted:` (see `Marker`).
 */
export const redactedSignature = (p: { data: string; family: ir.Family }): string =>
  carryMarked(REDACTED, { family: p.family, value: p.data }, FAMILY);

/** A client thought part back into IR thinking (or the redacted thinking it stands for). */
export function readThought(
  text: string,
  rawSignature: string | undefined,
): ir.ThinkingPart | ir.RedactedThinkingPart {
  const signature = rawSignature === undefined ? undefined : readSignature(rawSignature, FAMILY);
  const redacted = signature && readMarked(REDACTED, signature);
  if (redacted) return { type: "redacted_thinking", data: redacted.value, family: redacted.family };
  return { type: "thinking", text, ...(signature && { signature }) };
}
