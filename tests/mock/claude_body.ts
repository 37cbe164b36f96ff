/**
 * Anthropic's Messages body as the cloud platforms take it: the platform's own
 * `anthropic_version` in the body instead of the header. The platforms also accept a dated
 * API version there: the Anthropic Bedrock and Vertex SDKs copy their `anthropic-version`
 * header (e.g. `2026-10-21`) into the body when the caller sets none.
 */
import type { Json } from "./vendor.ts";

const DATED = /^\d{4}-\d{2}-\d{2}$/;

/** A problem with `body.anthropic_version` on a platform whose own version is `own`. */
export function anthropicVersionProblem(body: Json, own: string): string | undefined {
  if (!("anthropic_version" in body)) return "required key [anthropic_version] not found";
  const v = body.anthropic_version;
  if (v !== own && !(typeof v === "string" && DATED.test(v))) {
    return `anthropic_version: ${JSON.stringify(v)} is not a valid enum value`;
  }
}
