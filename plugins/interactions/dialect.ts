/**
 * Interactions clients speak Google's dialect (key headers, error envelope); only the end of a
 * cut stream differs: an `error` event, whose `error.code` says `upstream_interrupted`.
 */
import type { Dialect } from "../../src/kit/format.ts";
import { formatSse } from "../../src/kit/sse.ts";
import { googleDialect } from "../generate-content/dialect.ts";
import { errorEvent } from "./encode_stream.ts";

export const interactionsDialect: Dialect = {
  ...googleDialect,
  interruption: (message) =>
    formatSse(errorEvent({ type: "error", status: 502, kind: "upstream_interrupted", message })),
};
