/**
 * Test side of `converse` (Bedrock Converse): its clients are the AWS SDKs' ConverseCommand and
 * ConverseStreamCommand. Its stream fixtures are JSON lines, one frame each (`{"event":
 * "messageStart", "data": {…}}`, or `{"exception": "throttlingException", "data": {…}}`), framed
 * as AWS event stream by the mock's own encoder and read back by its own decoder (not the library
 * the gateway uses).
 */
import type { FormatSide, WireStreams } from "../formats.ts";
import { concat, decodeFrames, eventFrame, exceptionFrame } from "../mock/eventstream.ts";
import { bedrockHeaders, bedrockModelPath, bodies, LOOP_TOOL } from "../requests.ts";
import { CONVERSE_STREAM, converseFraming } from "../../plugins/converse/framing.ts";

export const streams: WireStreams = {
  ext: ".jsonl",
  bytes: (fixture) =>
    concat(
      fixture.split("\n").filter((l) => l.trim()).map((line) => {
        const { event, exception, data } = JSON.parse(line);
        return exception ? exceptionFrame(exception, data) : eventFrame(event, data);
      }),
    ),
  text: (bytes) =>
    decodeFrames(bytes).map(({ headers, payload }) => {
      const data = JSON.parse(new TextDecoder().decode(payload));
      const exception = headers[":exception-type"];
      return JSON.stringify(
        exception ? { exception, data } : { event: headers[":event-type"], data },
      ) +
        "\n";
    }).join(""),
};

type Body = Record<string, unknown>;

export const side: FormatSide = {
  providerBase: "",
  client: {
    path: (model, stream) => bedrockModelPath(model, stream ? "converse-stream" : "converse"),
    headers: bedrockHeaders,
    body: bodies.converse,
    rich: {
      system: [{ text: "s" }],
      messages: [
        { role: "user", content: [{ text: "hi" }] },
        { role: "assistant", content: [{ toolUse: { toolUseId: "t1", name: "f", input: {} } }] },
        {
          role: "user",
          content: [{ toolResult: { toolUseId: "t1", content: [{ text: "r" }] } }],
        },
      ],
      toolConfig: {
        tools: [{ toolSpec: { name: "f", inputSchema: { json: { type: "object" } } } }],
        toolChoice: { auto: {} },
      },
      inferenceConfig: { maxTokens: 100, temperature: 0.5, stopSequences: ["x"] },
      additionalModelRequestFields: { thinking: { type: "enabled", budget_tokens: 2000 } },
    },
  },
  streams: { ...streams, framing: CONVERSE_STREAM, read: converseFraming },
  mock: { provider: "bedrock-cv", routes: [{ models: ["cv-*"] }], relayModel: "cv-text" },
  loop: {
    ask: (_model, _stream, question) => ({
      messages: [{ role: "user", content: [{ text: question }] }],
      inferenceConfig: { maxTokens: 1024 },
      toolConfig: {
        tools: [{
          toolSpec: {
            name: LOOP_TOOL.name,
            description: LOOP_TOOL.description,
            inputSchema: { json: LOOP_TOOL.parameters },
          },
        }],
      },
    }),
    followUp: (ask, answer, call, result) => ({
      ...ask,
      messages: [
        ...ask.messages as unknown[],
        (answer.output as { message: Body }).message,
        {
          role: "user",
          content: [{ toolResult: { toolUseId: call.id, content: [{ text: result }] } }],
        },
      ],
    }),
    say: (ask, answer, question) => ({
      ...ask,
      messages: [
        ...ask.messages as unknown[],
        (answer.output as { message: Body }).message,
        { role: "user", content: [{ text: question }] },
      ],
    }),
  },
};
