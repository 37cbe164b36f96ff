/**
 * An independent AWS Signature Version 4 verifier for the Bedrock mock, written from the SigV4
 * specification with WebCrypto: it rebuilds the canonical request from what arrived, the string
 * to sign and the signing key, and compares signatures. The gateway signs with a library;
 * agreeing with this verifier is the proof that it signs as AWS checks.
 */

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials: `x-amz-security-token` must carry it. */
  sessionToken?: string;
}

/** Why AWS would refuse the request: the status, `x-amzn-errortype` name and message. */
export interface AuthFailure {
  status: number;
  type: string;
  message: string;
}

const ALGORITHM = "AWS4-HMAC-SHA256";
/** How far `x-amz-date` may be from the server's clock. */
const MAX_SKEW_MS = 5 * 60_000;

const encoder = new TextEncoder();
const hex = (bytes: ArrayBuffer) =>
  Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
const sha256 = async (data: string) =>
  hex(
    await crypto.subtle.digest("SHA-256", encoder.encode(data)),
  );

async function hmac(key: BufferSource, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return crypto.subtle.sign("HMAC", k, encoder.encode(data));
}

/** RFC 3986 encoding: everything but unreserved characters, `%` included. */
const uriEncode = (s: string) =>
  encodeURIComponent(s).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

/**
 * The canonical URI: each segment of the path as received encoded once more (every service
 * but S3 double-encodes), so `%3A` in a model id is signed as `%253A`.
 */
function canonicalUri(rawPath: string): string {
  return rawPath.split("/").map(uriEncode).join("/") || "/";
}

function canonicalQuery(params: URLSearchParams): string {
  return [...params]
    .map(([k, v]) => [uriEncode(k), uriEncode(v)])
    .sort(([a, x], [b, y]) => a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0)
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
}

interface ParsedAuthorization {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

function parseAuthorization(value: string): ParsedAuthorization | undefined {
  const m = value.match(
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/,
  );
  if (!m) return undefined;
  const [, accessKeyId, date, region, service, headers, signature] = m;
  return { accessKeyId, date, region, service, signedHeaders: headers.split(";"), signature };
}

/**
 * A signed header's value. HTTP/2 clients (the AWS SDK's Bedrock client is one) sign the
 * `:authority` pseudo-header where HTTP/1.1 ones sign `host`; both are the host reached.
 */
function headerValue(req: Request, name: string): string {
  if (name === "host" || name === ":authority") {
    return req.headers.get("host") ?? new URL(req.url).host;
  }
  return req.headers.get(name) ?? "";
}

const deny = (status: number, type: string, message: string): AuthFailure => ({
  status,
  type,
  message,
});
const MISMATCH = "The request signature we calculated does not match the signature you " +
  "provided. Check your AWS Secret Access Key and signing method. Consult the service " +
  "documentation for details.";
const BAD_TOKEN = "The security token included in the request is invalid.";

/**
 * Checks the SigV4 signature of a request for `service` in `region`; undefined when AWS would
 * accept it. `rawPath` is the path exactly as sent (percent-encoding kept).
 */
export async function verifySigV4(
  req: Request,
  rawPath: string,
  body: string,
  credentials: AwsCredentials,
  scope: { region: string; service: string },
): Promise<AuthFailure | undefined> {
  const header = req.headers.get("authorization");
  if (!header) {
    return deny(403, "MissingAuthenticationTokenException", "Missing Authentication Token");
  }
  const auth = parseAuthorization(header);
  if (!auth) {
    return deny(
      400,
      "IncompleteSignatureException",
      `Authorization header requires a valid ${ALGORITHM} signature.`,
    );
  }
  if (auth.accessKeyId !== credentials.accessKeyId) {
    return deny(403, "UnrecognizedClientException", BAD_TOKEN);
  }
  if (req.headers.get("x-amz-security-token") !== (credentials.sessionToken ?? null)) {
    return deny(403, "UnrecognizedClientException", BAD_TOKEN);
  }
  if (auth.region !== scope.region || auth.service !== scope.service) {
    return deny(
      403,
      "InvalidSignatureException",
      `Credential should be scoped to a valid region and service '${scope.service}'.`,
    );
  }
  const amzDate = req.headers.get("x-amz-date") ?? "";
  const when = Date.parse(
    amzDate.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z"),
  );
  if (!amzDate.startsWith(auth.date) || Number.isNaN(when)) {
    return deny(403, "InvalidSignatureException", MISMATCH);
  }
  if (Math.abs(Date.now() - when) > MAX_SKEW_MS) {
    return deny(
      403,
      "InvalidSignatureException",
      `Signature expired: ${amzDate} is now earlier than the allowed window.`,
    );
  }
  const signsHost = auth.signedHeaders.includes("host") ||
    auth.signedHeaders.includes(":authority");
  if (!signsHost || !auth.signedHeaders.includes("x-amz-date")) {
    return deny(403, "InvalidSignatureException", MISMATCH);
  }
  const payloadHash = await sha256(body);
  const claimed = req.headers.get("x-amz-content-sha256");
  if (claimed !== null && claimed !== payloadHash) {
    return deny(
      400,
      "XAmzContentSHA256Mismatch",
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
    );
  }
  const canonicalHeaders = auth.signedHeaders
    .map((name) => `${name}:${headerValue(req, name).trim().replace(/\s+/g, " ")}\n`)
    .join("");
  const canonicalRequest = [
    req.method,
    canonicalUri(rawPath),
    canonicalQuery(new URL(req.url).searchParams),
    canonicalHeaders,
    auth.signedHeaders.join(";"),
    payloadHash,
  ].join("\n");
  const credentialScope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`;
  const stringToSign = [ALGORITHM, amzDate, credentialScope, await sha256(canonicalRequest)].join(
    "\n",
  );
  let key: BufferSource = encoder.encode(`AWS4${credentials.secretAccessKey}`);
  for (const part of [auth.date, auth.region, auth.service, "aws4_request"]) {
    key = await hmac(key, part);
  }
  const expected = hex(await hmac(key, stringToSign));
  return expected === auth.signature ? undefined : deny(403, "InvalidSignatureException", MISMATCH);
}
