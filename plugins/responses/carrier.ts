/**
 * How IR thinking and signatures ride in Responses `reasoning` items, the format's only slot
 * for opaque model state: `encrypted_content` holds native OpenAI values as they are and other
 * families' signatures behind `carrySignature`'s prefix, and comes back on the next request.
 *
 * A reasoning item alone cannot tell apart some IR shapes, so carried values may start with a
 * marker (see `Marker`; no OpenAI encrypted content starts so either):
 * - `redacted:` — an Anthropic `redacted_thinking` block's data (not a signature);
 * - `attached:` — the signature of the text or tool-call item just before this reasoning item
 *   (a Gemini thought signature on a function call, which has no slot in a `function_call`
 *   item; it may come through Gemini's OpenAI-compatible chat API as family `openai`).
 * One IR thinking part is one reasoning item, so several Anthropic thinking blocks keep their
 * own signatures.
 */
import type * as ir from "../../src/kit/ir.ts";
import { carrySignature, readSignature } from "../../src/kit/signature.ts";
import { ATTACHED, carryMarked, readMarked, REDACTED } from "../shared.ts";

/** `encrypted_content` for a thinking or redacted-thinking part (none for unsigned thinking). */
export function encryptedContentOf(
  part: ir.ThinkingPart | ir.RedactedThinkingPart,
): string | undefined {
  if (part.type === "thinking") return part.signature && carrySignature(part.signature, "openai");
  if (part.family === "openai") return part.data;
  return carryMarked(REDACTED, { family: part.family, value: part.data }, "openai");
}

/** `encrypted_content` of the reasoning item that follows a signed text or tool-call item. */
export function attachedSignature(sig: ir.Signature | undefined): string | undefined {
  return sig && carryMarked(ATTACHED, sig, "openai");
}

/** A reasoning item's summary (or raw reasoning) text. */
export function reasoningText(
  summary: readonly { text: string }[] | undefined,
  content: readonly { text: string }[] | null | undefined,
): string {
  const texts = summary?.length ? summary : content ?? [];
  return texts.map((t) => t.text).join("\n\n");
}

/**
 * Appends what a reasoning item carries to `parts`: a thinking or redacted-thinking part, or
 * (for an `attached:` signature) the signature of the text or tool call already last in it.
 */
export function appendReasoning(parts: ir.Part[], text: string, encrypted?: string | null) {
  if (!encrypted) {
    if (text) parts.push({ type: "thinking", text });
    return;
  }
  const sig = readSignature(encrypted, "openai");
  const attached = readMarked(ATTACHED, sig);
  const redacted = sig.family === "openai" ? undefined : readMarked(REDACTED, sig);
  if (attached) {
    const last = parts.at(-1);
    if (last?.type === "text" || last?.type === "tool_call") last.signature = attached;
  } else if (redacted) {
    parts.push({ type: "redacted_thinking", data: redacted.value, family: redacted.family });
  } else if (sig.family === "openai" && !text) {
    // An OpenAI reasoning item without a summary is opaque state, like redacted thinking.
    parts.push({ type: "redacted_thinking", data: encrypted, family: "openai" });
  } else {
    parts.push({ type: "thinking", text, signature: sig });
  }
}
