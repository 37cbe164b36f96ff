/**
 * Codex's in-band compaction on converted routes. Codex ends the input with
 * `{"type":"compaction_trigger"}` and accepts exactly one `compaction` item back, which it
 * replays in later requests instead of the history. No other provider can make OpenAI's
 * encrypted compaction, so the gateway asks the model for a summary and carries it in the
 * item as `gwcmp1:` + base64(UTF-8 text); a replayed item becomes that summary again.
 */
import { badRequest } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";

const PREFIX = "gwcmp1:";

/** Replaces the trigger: what the model is asked to write. */
export const COMPACTION_PROMPT =
  "Write a concise summary of the conversation so far. It will replace the conversation, " +
  "so include everything needed to continue the work: the user's goals and instructions, " +
  "decisions made, important facts and results (files, commands, errors), and what remains " +
  "to be done. Reply with the summary only.";

const SUMMARY_HEADER = "Summary of the earlier conversation:\n";

/** The `encrypted_content` of the compaction item that carries `summary`. */
export function compactionContent(summary: string): string {
  return PREFIX + new TextEncoder().encode(summary).toBase64();
}

/** A replayed compaction item as the user message that stands for the earlier conversation. */
export function summaryMessage(encrypted: string, path: string): ir.Message {
  if (!encrypted.startsWith(PREFIX)) {
    throw badRequest(
      `${path}: this compaction item was made by another provider and can only be replayed to ` +
        "the provider that made it",
      path,
    );
  }
  let summary: string;
  try {
    const bytes = Uint8Array.fromBase64(encrypted.slice(PREFIX.length));
    summary = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw badRequest(`${path}.encrypted_content: corrupted gateway compaction`, path);
  }
  return { role: "user", parts: [{ type: "text", text: SUMMARY_HEADER + summary }] };
}
