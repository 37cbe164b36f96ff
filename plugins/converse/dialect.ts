/**
 * Amazon Bedrock Runtime as its clients hear it (Converse, and beside it InvokeModel and
 * CountTokens, plugins/bedrock/): the
 * gateway key as a Bedrock API key (`Authorization: Bearer`), or an AWS Signature V4 made with
 * it — the access key id names the key (`keys[].name`), the secret access key is the key — which
 * is checked for any region and the service `bedrock`; errors as Bedrock sends them, a
 * `{"message"}` body and the exception in `x-amzn-errortype` (docs/cloud-clients.md).
 */
import type { GatewayError } from "../../src/kit/errors.ts";
import type { Dialect } from "../../src/kit/format.ts";
import { exceptionOf } from "../platforms/bedrock_wire.ts";
import { parseSigV4, verifyAwsSignature } from "../platforms/sigv4.ts";
import { bearer } from "../shared.ts";

/**
 * Bedrock Runtime's path prefixes: its model operations, and the inference-profile list Claude
 * Code asks for first (not served: a 404 in Bedrock's dialect, which it takes in stride).
 */
export const BEDROCK_PATHS = ["/model/", "/inference-profiles"];

/** The service a client signs for, as it signs for Bedrock Runtime itself. */
const SERVICE = "bedrock";

/** The namespace AWS puts after an exception's name in `x-amzn-errortype`. */
const ERROR_NAMESPACE = "http://internal.amazon.com/coral/com.amazon.bedrock/";

export const bedrockDialect: Dialect = {
  id: "bedrock",
  presentedKey: (req) => bearer(req.headers),
  keyLocations: [
    "Authorization: Bearer <key>",
    "an AWS Signature V4 (access key id: the key's name, secret access key: the key)",
  ],
  signedRequest(req, url) {
    const claim = parseSigV4(req.headers.get("authorization"));
    if (!claim) return undefined;
    const { method, headers } = req;
    return {
      keyName: claim.accessKeyId,
      verify: (key, body) =>
        verifyAwsSignature({ method, url, headers }, body, claim, key, SERVICE),
    };
  },
  errorBody: (err: GatewayError) => ({ message: err.message }),
  errorHeaders: (
    err,
  ) => [["x-amzn-errortype", `${exceptionOf(err.kind, err.code)}:${ERROR_NAMESPACE}`]],
  // AWS refuses every credential with a 403; Anthropic's 529 is Bedrock's 503.
  status: (s) => (s === 401 ? 403 : s === 529 ? 503 : s),
  // Bedrock's streams are AWS event streams: their framings end them (exception frames).
  interruption: () => "",
};
