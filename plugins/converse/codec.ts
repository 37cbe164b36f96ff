/**
 * The Bedrock Converse codec (`/model/{modelId}/converse`, `/converse-stream`): an upstream
 * API only. No client speaks Converse to the gateway, so its ingress half refuses (it is
 * never reached: the plugin serves no endpoint).
 */
import type { Codec, StreamWatch } from "../../src/kit/codec.ts";
import { modelIdSegment } from "../platforms/bedrock_wire.ts";
import { decodeResponse, usageOf } from "./response.ts";
import { decodeStream } from "./decode_stream.ts";
import { encodeRequest } from "./encode_request.ts";

const upstreamOnly = (): never => {
  throw new Error("converse is an upstream API only: no client speaks it to the gateway");
};

/** The operation's path, the model id one percent-encoded segment (or a 400 naming it). */
const conversePath = (model: string, stream: boolean) =>
  `/model/${modelIdSegment(model)}/${stream ? "converse-stream" : "converse"}`;

export const converseCodec: Codec = {
  api: "converse",
  decodeRequest: upstreamOnly,
  encodeResponse: upstreamOnly,
  encodeStream: upstreamOnly,
  path: conversePath,
  encodeRequest,
  decodeResponse,
  usage: ({ json }) => {
    const last = json.at(-1);
    return last && usageOf(last);
  },
  decodeStream,
  // Relays need a client of the same format; Converse has none.
  watch: upstreamOnly as () => StreamWatch,
};
