/**
 * Test side of `bedrock-messages` (Claude's InvokeModel on Bedrock, a format only clients speak):
 * Anthropic's body without `model` and `stream`, with Bedrock's `anthropic_version`. Its streams
 * are `chunk` frames each holding one Anthropic event in base64; their fixtures are JSON lines,
 * one frame each (`{"chunk": {…the event…}}`, or `{"exception": "modelStreamErrorException",
 * "data": {…}}`), read by the mock's own decoder. The latencies in
 * `amazon-bedrock-invocationMetrics` are the clock's and read as 0.
 */
import type { FormatSide } from "../formats.ts";
import { decodeFrames } from "../mock/eventstream.ts";
import { bedrockHeaders, bedrockModelPath, bodies } from "../requests.ts";
import { side as messages } from "./messages.ts";
import { INVOKE_STREAM } from "../../plugins/bedrock/framing.ts";
import { invokeStreamFraming } from "../../plugins/platforms/bedrock_wire.ts";
import { sseFraming } from "../../src/request/stream_stage.ts";

const decoder = new TextDecoder();

/** A frame's line; the clock's latencies as 0. */
function line({ headers, payload }: { headers: Record<string, string>; payload: Uint8Array }) {
  const data = JSON.parse(decoder.decode(payload));
  const exception = headers[":exception-type"];
  if (exception) return JSON.stringify({ exception, data });
  const chunk = JSON.parse(decoder.decode(Uint8Array.fromBase64(data.bytes)));
  const metrics = chunk["amazon-bedrock-invocationMetrics"];
  if (metrics) Object.assign(metrics, { invocationLatency: 0, firstByteLatency: 0 });
  return JSON.stringify({ chunk });
}

export const side: FormatSide = {
  client: {
    path: (model, stream) =>
      bedrockModelPath(model, stream ? "invoke-with-response-stream" : "invoke"),
    headers: bedrockHeaders,
    body: bodies.invoke,
    // The path names the model; the version is Bedrock's.
    rich: { anthropic_version: "bedrock-2023-05-31", ...messages.client.rich },
  },
  streams: {
    ext: ".jsonl",
    text: (bytes) => decodeFrames(bytes).map((f) => line(f) + "\n").join(""),
    framing: INVOKE_STREAM,
    // What the Anthropic Bedrock SDK does: each chunk's event, as Anthropic's SSE.
    read: () => invokeStreamFraming(sseFraming()),
  },
  loop: {
    ask: (model, stream, question) => {
      const { model: _, stream: __, ...ask } = messages.loop!.ask(model, stream, question);
      return { anthropic_version: "bedrock-2023-05-31", ...ask };
    },
    followUp: messages.loop!.followUp,
    say: messages.loop!.say,
  },
};
