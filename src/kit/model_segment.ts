/**
 * A model name that goes into an upstream URL must stay one path segment: otherwise a client
 * could make the gateway call another endpoint of the provider with the provider's key
 * (`gemini-x/../../v1beta/cachedContents#`).
 */
import { badRequest } from "./errors.ts";

const UNSAFE: [RegExp, string][] = [
  [/[/\\]/, "a slash"],
  [/[?#]/, "a query or fragment mark"],
  [/%/, "a percent sign"],
  [/[\s\p{Cc}]/u, "whitespace or a control character"],
  [/\.\./, '".."'],
];

/** Why `model` cannot be a path segment (`action`: the URL appends `:action` to it). */
export function unsafeSegmentReason(model: string, action = false): string | undefined {
  if (model === "") return "it is empty";
  for (const [re, what] of UNSAFE) if (re.test(model)) return `it contains ${what}`;
  if (action && model.includes(":")) return 'it contains ":", which would select another action';
}

/** `model` as one percent-encoded URL path segment; a 400 naming `model` if it cannot be. */
export function modelSegment(model: string, opts: { action?: boolean } = {}): string {
  const why = unsafeSegmentReason(model, opts.action);
  if (why) {
    throw badRequest(
      `model: ${JSON.stringify(model.slice(0, 200))} cannot be sent in the upstream URL: ${why}`,
      "model",
    );
  }
  return encodeURIComponent(model);
}
