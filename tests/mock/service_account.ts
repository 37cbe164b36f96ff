/**
 * Throwaway Google service accounts for tests: a fresh RSA key pair made with WebCrypto, the
 * private key as PKCS#8 PEM in the JSON Google issues (the fields the auth libraries read).
 */

export interface ServiceAccountJson {
  type: "service_account";
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  auth_uri: string;
  token_uri: string;
  universe_domain: string;
}

export interface ServiceAccount {
  json: ServiceAccountJson;
  /** Verifies the account's RS256 signatures (what Google keeps of the key). */
  publicKey: CryptoKey;
}

export const RS256 = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as const;

function pem(label: string, der: ArrayBuffer): string {
  const b64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  return `-----BEGIN ${label}-----\n${b64.match(/.{1,64}/g)!.join("\n")}\n-----END ${label}-----\n`;
}

export async function createServiceAccount(
  tokenUri: string,
  projectId = "mock-project",
): Promise<ServiceAccount> {
  const keys = await crypto.subtle.generateKey(
    { ...RS256, modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) },
    true,
    ["sign", "verify"],
  );
  const id = crypto.randomUUID().replaceAll("-", "");
  return {
    json: {
      type: "service_account",
      project_id: projectId,
      private_key_id: id,
      private_key: pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", keys.privateKey)),
      client_email: `gateway-test@${projectId}.iam.gserviceaccount.com`,
      client_id: String(BigInt(`0x${id.slice(0, 15)}`)),
      auth_uri: "https://accounts.google.com/o/oauth2/auth",
      token_uri: tokenUri,
      universe_domain: "googleapis.com",
    },
    publicKey: keys.publicKey,
  };
}
