/**
 * Long decode on Interactions, as @google/genai's automatic continuation runs it: an
 * interaction that reaches the per-request output cap ends with `status:
 * "requires_continuation"` and a `continuation_token` (in the JSON, or on the stream's
 * `interaction.completed`; a status update carrying one mid-stream is a checkpoint). The gateway
 * sends `store: false`, so a hop is the same body again with the token.
 */
import type { LongDecode } from "../../src/kit/long_decode.ts";
import { nonEmpty } from "../shared.ts";

type Obj = Record<string, unknown>;

export const longDecode: LongDecode = {
  resume: (body, token) => ({ ...body, continuation_token: token }),
  resumes: (body) => nonEmpty(body.continuation_token),
  marker: '"continuation_token"',
  // A resource or a status update carries it at the top; an `interaction.*` event inside.
  issued: (answer) =>
    nonEmpty(answer.continuation_token) ??
      nonEmpty((answer.interaction as Obj | undefined)?.continuation_token),
};
