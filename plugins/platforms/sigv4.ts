/**
 * AWS Signature Version 4 for requests to AWS services (Bedrock: service `bedrock`), signed by
 * aws4fetch: WebCrypto only, no Node shims, no dependencies. The signed host is the URL's, so
 * a VPC endpoint or a test server in `base_url` is signed for what it is.
 */
import { AwsV4Signer } from "aws4fetch";

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

/** `headers` plus the signature headers (`authorization`, `x-amz-date`, …) for this request. */
export async function signAwsRequest(
  url: string,
  request: { method: string; headers: HeadersInit; body: string },
  credentials: AwsCredentials,
  scope: AwsScope,
): Promise<Headers> {
  const signer = new AwsV4Signer({ url, ...request, ...credentials, ...scope });
  return (await signer.sign()).headers;
}
