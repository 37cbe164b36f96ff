/**
 * An `aws:` block's region and keys, and the credential they make, for every platform on AWS
 * (Bedrock, Claude Platform on AWS): an access key pair signs each call (SigV4, the platform's
 * service), or without one the provider's `api_key` goes as `Authorization: Bearer`.
 */
import { z } from "zod";
import type { Credential, CredentialContext } from "../../src/kit/platform.ts";
import type { OutgoingRequest } from "../../src/kit/format.ts";
import { scrubSignatures, signAwsRequest } from "./sigv4.ts";

/** The block's fields: a region, and an optional access key pair (and session token). */
export const AWS_KEYS = {
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, "an AWS region such as us-east-1"),
  /** With `secret_access_key`: calls are signed (SigV4); without: `api_key` is a Bearer. */
  access_key_id: z.string().min(1).optional(),
  secret_access_key: z.string().min(1).optional(),
  /** Temporary credentials (STS): sent as `x-amz-security-token`, and signed. */
  session_token: z.string().min(1).optional(),
};

type AwsKeys = {
  region: string;
  access_key_id?: string;
  secret_access_key?: string;
  session_token?: string;
};

/** The keys' rules: a pair or none, and a session token only with a pair. */
export function checkKeys(a: AwsKeys, ctx: z.RefinementCtx): void {
  if ((a.access_key_id === undefined) !== (a.secret_access_key === undefined)) {
    ctx.addIssue({
      code: "custom",
      message: "give access_key_id and secret_access_key together",
      path: ["secret_access_key"],
    });
  }
  if (a.session_token !== undefined && a.access_key_id === undefined) {
    ctx.addIssue({
      code: "custom",
      message: "a session token goes with an access key pair",
      path: ["session_token"],
    });
  }
}

/**
 * The credential of a block for `service`; `scoped` sets what every call carries besides (and
 * under) the credential, before it signs.
 */
export function awsCredential(
  aws: AwsKeys,
  service: string,
  ctx: CredentialContext,
  scoped: (headers: Headers) => void = () => {},
): Credential {
  const { access_key_id, secret_access_key, session_token, region } = aws;
  if (access_key_id === undefined || secret_access_key === undefined) {
    return {
      authorize(req: OutgoingRequest, key: string | undefined) {
        scoped(req.headers);
        if (key) req.headers.set("authorization", `Bearer ${key}`);
      },
    };
  }
  ctx.secret(secret_access_key);
  // Not a secret by itself, but it names the AWS identity, and errors quote it (`Credential=`).
  ctx.secret(access_key_id);
  if (session_token) ctx.secret(session_token);
  const credentials = {
    accessKeyId: access_key_id,
    secretAccessKey: secret_access_key,
    sessionToken: session_token,
  };
  return {
    async authorize(req: OutgoingRequest) {
      scoped(req.headers);
      req.headers = await signAwsRequest(req.url.href, req, credentials, { region, service });
    },
    // AWS's errors quote the signature (IncompleteSignatureException, a proxy's echo).
    scrub: scrubSignatures,
  };
}
