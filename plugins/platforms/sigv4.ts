/**
 * AWS Signature Version 4, both ways, by one signer (@smithy/signature-v4, the AWS SDKs' own):
 * requests to AWS services are signed (Bedrock: service `bedrock`; Claude Platform on AWS:
 * `aws-external-anthropic`), and requests clients signed with a gateway key are checked by
 * signing them again with that key and comparing (docs/cloud-clients.md). The signed host is
 * the URL's, so a VPC endpoint or a test server in `base_url` is signed for what it is; a
 * received request's host is the one it reached (`Host`, or HTTP/2's `:authority`, which Deno
 * puts in the request's URL).
 */
import { GatewayError } from "../../src/kit/errors.ts";
import { joinBytes } from "../../src/kit/http.ts";
import { REDACTED } from "../../src/kit/platform.ts";

interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials (STS): sent as `x-amz-security-token` and signed. */
  sessionToken?: string;
}

interface AwsScope {
  region: string;
  service: string;
}

const encoder = new TextEncoder();
/** Bytes to hash (a view is used as is: the bodies signed are never shared memory). */
const bytesOf = (data: string | ArrayBuffer | ArrayBufferView): Uint8Array<ArrayBuffer> =>
  typeof data === "string"
    ? encoder.encode(data)
    : data instanceof ArrayBuffer
    ? new Uint8Array(data)
    : new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);

/** SHA-256, or HMAC-SHA-256 with a secret, by WebCrypto: the hash the signer is given. */
class Sha256 {
  readonly #secret?: Uint8Array<ArrayBuffer>;
  #data: Uint8Array<ArrayBuffer>[] = [];

  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    if (secret !== undefined) this.#secret = bytesOf(secret);
  }

  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.#data.push(bytesOf(data));
  }

  async digest(): Promise<Uint8Array> {
    const data = joinBytes(this.#data) as Uint8Array<ArrayBuffer>;
    if (!this.#secret) return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
    const key = await crypto.subtle.importKey(
      "raw",
      this.#secret,
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    return new Uint8Array(await crypto.subtle.sign("HMAC", key, data));
  }

  reset(): void {
    this.#data = [];
  }
}

/** A request as the signer takes it. */
interface Signable {
  method: string;
  url: URL;
  /** Lower-case names; the host among them. */
  headers: Record<string, string>;
  body: string | Uint8Array;
}

/**
 * The `authorization` value for `req` signed at `date`. `signed` names the headers to sign
 * when they are given (a received request's own list, unsignable ones included); otherwise
 * all but the unsignable.
 */
async function authorization(
  req: Signable,
  credentials: AwsCredentials,
  scope: AwsScope,
  date: Date,
  signed?: Set<string>,
): Promise<Record<string, string>> {
  // Loaded on first use: with its Smithy modules it holds heap (a cost to every request's
  // garbage collection) that a gateway without AWS providers or signing clients never uses.
  const { SignatureV4 } = await import("@smithy/signature-v4");
  const signer = new SignatureV4({
    credentials,
    region: scope.region,
    service: scope.service,
    sha256: Sha256,
    applyChecksum: false,
  });
  const { url } = req;
  const query: Record<string, string[]> = {};
  for (const [k, v] of url.searchParams) (query[k] ??= []).push(v);
  const out = await signer.sign({
    method: req.method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    path: url.pathname,
    query,
    headers: req.headers,
    body: req.body,
  }, { signingDate: date, signableHeaders: signed });
  return out.headers;
}

/** `headers` plus the signature headers (`authorization`, `x-amz-date`, …) for this request. */
export async function signAwsRequest(
  url: string,
  request: { method: string; headers: HeadersInit; body: string },
  credentials: AwsCredentials,
  scope: AwsScope,
): Promise<Headers> {
  const target = new URL(url);
  const headers: Record<string, string> = { host: target.host };
  new Headers(request.headers).forEach((v, k) => headers[k] = v);
  const signed = await authorization(
    { method: request.method, url: target, headers, body: request.body },
    credentials,
    scope,
    new Date(),
  );
  const out = new Headers();
  // The host is the URL's: fetch sets it.
  for (const [k, v] of Object.entries(signed)) if (k !== "host") out.set(k, v);
  return out;
}

/**
 * Where AWS's error texts quote a signature: the `authorization` header received
 * (IncompleteSignatureException: `… in Authorization header: 'AWS4-HMAC-SHA256 Credential=…,
 * SignedHeaders=…, Signature=<hex>'.`), a presigned URL's `X-Amz-Signature=<hex>`, S3's
 * `<SignatureProvided>`, a JSON member `"signature": "<hex>"`.
 */
const QUOTED_SIGNATURE = /(signature(?:provided)?["']?\s*[=:>]\s*["']?)[0-9a-f]{64}(?![0-9a-f])/gi;

/** The signature of a SigV4 `authorization` header. */
const SIGNED = /Signature=([0-9a-f]{64})/;

/**
 * An error answer to a call that went with `sent` headers, its SigV4 signature scrubbed: the
 * call's own wherever it stands (a proxy quoting it bare), and any that AWS's messages quote.
 * The access key id, secret key and session token are registered secrets, scrubbed before; a
 * signature, new with every call, cannot be one, and it lets that exact call be replayed for
 * minutes (AWS accepts a signed request for 5 minutes either side of its date).
 */
export function scrubSignatures(text: string, sent: Headers): string {
  const own = sent.get("authorization")?.match(SIGNED)?.[1];
  if (own && text.includes(own)) text = text.replaceAll(own, REDACTED);
  return text.replace(QUOTED_SIGNATURE, `$1${REDACTED}`);
}

/** What a SigV4 `authorization` header claims. */
export interface SigV4Claim {
  accessKeyId: string;
  /** `YYYYMMDD` of the credential scope. */
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})$/;

/** The claim of a SigV4 `authorization` value; undefined for anything else (a Bearer). */
export function parseSigV4(value: string | null): SigV4Claim | undefined {
  if (!value?.startsWith("AWS4-HMAC-SHA256 ")) return undefined;
  const m = value.match(AUTHORIZATION);
  if (!m) {
    throw new GatewayError(
      400,
      "authentication",
      "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' of a valid " +
        "AWS4-HMAC-SHA256 signature",
      undefined,
      undefined,
      "IncompleteSignatureException",
    );
  }
  const [, accessKeyId, date, region, service, headers, signature] = m;
  return { accessKeyId, date, region, service, signedHeaders: headers.split(";"), signature };
}

/** How far a request's `x-amz-date` may be from the gateway's clock, as AWS allows. */
export const MAX_SKEW_MS = 5 * 60_000;

const refused = (message: string, code = "InvalidSignatureException") =>
  new GatewayError(403, "authentication", message, undefined, undefined, code);

const MISMATCH = "The request signature we calculated does not match the signature you " +
  "provided. Check your AWS Secret Access Key and signing method.";

/** `YYYYMMDDTHHMMSSZ` as a date; undefined if it is not one. */
function amzDate(value: string): Date | undefined {
  const m = value.match(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/);
  if (!m) return undefined;
  const at = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/** Equal texts, every character compared whatever differs first. */
function sameText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * Resolves when `claim` is `req`'s signature made with `secret` for `service` (any region),
 * dated within MAX_SKEW_MS of `now`, over `body`; otherwise rejects with a 403 named as AWS
 * names it (`InvalidSignatureException`, …).
 */
export async function verifyAwsSignature(
  req: { method: string; url: URL; headers: Headers },
  body: Uint8Array,
  claim: SigV4Claim,
  secret: string,
  service: string,
  now = Date.now(),
): Promise<void> {
  if (claim.service !== service) {
    throw refused(`Credential should be scoped to correct service: '${service}'.`);
  }
  const dated = req.headers.get("x-amz-date") ?? "";
  const at = amzDate(dated);
  if (!at || !dated.startsWith(claim.date) || !claim.signedHeaders.includes("x-amz-date")) {
    throw refused("The request must carry a signed x-amz-date of the credential's day.");
  }
  if (Math.abs(now - at.getTime()) > MAX_SKEW_MS) {
    throw refused(
      `Signature expired: ${dated} is now earlier than the allowed window (5 minutes).`,
    );
  }
  const host = req.url.host;
  if (!claim.signedHeaders.includes("host") && !claim.signedHeaders.includes(":authority")) {
    throw refused("The request's host must be signed.");
  }
  const payload = hex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytesOf(body))));
  // A declared hash is what the signature covers: it must be the body's (an unsigned payload,
  // which would let the body change under the signature, is refused).
  const declared = req.headers.get("x-amz-content-sha256");
  if (declared !== null && declared !== payload) {
    throw refused(
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
      "XAmzContentSHA256Mismatch",
    );
  }
  const headers: Record<string, string> = {};
  for (const name of claim.signedHeaders) {
    headers[name] = name === "host" || name === ":authority" ? host : req.headers.get(name) ?? "";
  }
  const signed = await authorization(
    { method: req.method, url: req.url, headers, body },
    { accessKeyId: claim.accessKeyId, secretAccessKey: secret },
    { region: claim.region, service: claim.service },
    at,
    new Set(claim.signedHeaders),
  );
  const expected = signed.authorization?.match(/Signature=([0-9a-f]{64})$/)?.[1] ?? "";
  if (!sameText(claim.signature, expected)) throw refused(MISMATCH);
}
