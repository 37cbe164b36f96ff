/**
 * The Bedrock Converse codec (`/model/{modelId}/converse`, `/converse-stream`): an upstream
 * API only. No client speaks Converse to the gateway, so its ingress half refuses (it is
 * never reached: the plugin serves no endpoint).
 */
import type { Codec, StreamWatch } from "../../src/contract/codec.ts";
import { badRequest } from "../../src/contract/errors.ts";
import { decodeResponse, usageOf } from "./response.ts";
import { decodeStream } from "./decode_stream.ts";
import { encodeRequest } from "./encode_request.ts";

const upstreamOnly = (): never => {
  throw new Error("converse is an upstream API only: no client speaks it to the gateway");
};

/**
 * Why a model id cannot be the path segment. ARNs (with `/` and `:`) are encoded whole, as
 * Bedrock takes them; only an empty or dot segment would be resolved into another path.
 */
export function unsafeModelId(model: string): string | undefined {
  if (model === "") return "it is empty";
  if (model === "." || model === "..") return "it is a dot segment";
}

/** The operation's path, the model id percent-encoded as one segment (or a 400 naming it). */
export function conversePath(model: string, stream: boolean): string {
  const why = unsafeModelId(model);
  if (why) {
    throw badRequest(
      `model: ${JSON.stringify(model)} cannot be sent in the upstream URL: ${why}`,
      "model",
    );
  }
  return `/model/${encodeURIComponent(model)}/${stream ? "converse-stream" : "converse"}`;
}

export const converseCodec: Codec = {
  api: "converse",
  decodeRequest: upstreamOnly,
  encodeResponse: upstreamOnly,
  encodeStream: upstreamOnly,
  path: conversePath,
  encodeRequest,
  decodeResponse,
  usage: usageOf,
  decodeStream,
  // Relays need a client of the same format; Converse has none.
  watch: upstreamOnly as () => StreamWatch,
};
