/**
 * Test side of `converse` (Bedrock Converse), a format only providers speak. Its stream
 * fixtures are JSON lines, one frame each (`{"event": "messageStart", "data": {…}}`, or
 * `{"exception": "throttlingException", "data": {…}}`), framed as AWS event stream by the
 * Bedrock mock's own encoder (not the library the gateway decodes with).
 */
import type { WireStreams } from "../formats.ts";
import { concat, eventFrame, exceptionFrame } from "../mock/eventstream.ts";

export const streams: WireStreams = {
  ext: ".jsonl",
  bytes: (fixture) =>
    concat(
      fixture.split("\n").filter((l) => l.trim()).map((line) => {
        const { event, exception, data } = JSON.parse(line);
        return exception ? exceptionFrame(exception, data) : eventFrame(event, data);
      }),
    ),
};
