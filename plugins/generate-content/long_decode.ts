/**
 * Gemini's long decode (ai.google.dev/gemini-api/docs/generate-content/long-decode, and
 * @google/genai's automatic continuation): a hop that reaches the per-request output cap with
 * budget left ends with `finishReason: "CONTINUATION"` and `candidates[0].continuationToken`;
 * the same request, with the token as its top-level `continuationToken`, goes on.
 * `maxOutputTokens` is one budget across hops, and a non-streaming request above 32,768 without
 * a token is refused.
 */
import type { LongDecode } from "../../src/kit/long_decode.ts";
import { nonEmpty } from "../shared.ts";
import { isObject } from "./json_schema.ts";

export const longDecode: LongDecode = {
  resume: (body, token) => ({ ...body, continuationToken: token }),
  // The REST API takes the proto's snake_case names too.
  resumes: (body) => nonEmpty(body.continuationToken) ?? nonEmpty(body.continuation_token),
  marker: '"continuationToken"',
  issued(answer) {
    const candidate = Array.isArray(answer.candidates) ? answer.candidates[0] : undefined;
    return isObject(candidate) ? nonEmpty(candidate.continuationToken) : undefined;
  },
  unaryLimit: 32_768,
};
