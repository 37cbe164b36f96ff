/**
 * Thinking/thought signatures are bound to the model family that made them. When a client's
 * format belongs to another family, the signature rides in that format's nearest slot with a
 * private prefix, and comes back intact on the next turn. Encoders send a signature upstream
 * only to its own family ("drop them when the target model's family differs").
 */
import type { Family, Signature } from "./ir.ts";

const PREFIX = "gwsig1:";

/** The string to put in the client's slot. Native signatures stay untouched. */
export function carrySignature(sig: Signature, clientFamily: Family): string {
  return sig.family === clientFamily ? sig.value : `${PREFIX}${sig.family}:${sig.value}`;
}

/** Reads a client-sent signature slot back into a Signature. */
export function readSignature(raw: string, clientFamily: Family): Signature {
  if (!raw.startsWith(PREFIX)) return { family: clientFamily, value: raw };
  const rest = raw.slice(PREFIX.length);
  const colon = rest.indexOf(":");
  return { family: rest.slice(0, colon) as Family, value: rest.slice(colon + 1) };
}

/** The signature value to send to a target family, or undefined when it belongs elsewhere. */
export function signatureFor(sig: Signature | undefined, target: Family): string | undefined {
  return sig?.family === target ? sig.value : undefined;
}
