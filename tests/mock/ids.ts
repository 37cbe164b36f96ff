/** Vendor-style random identifiers (`chatcmpl-…`, `resp_…`, `msg_01…`, `toolu_01…`, …). */

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX = "0123456789abcdef";

function random(length: number, alphabet: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}

export const ids = {
  chatCompletion: () => `chatcmpl-${random(29, ALNUM)}`,
  call: () => `call_${random(24, ALNUM)}`,
  response: () => `resp_${random(48, HEX)}`,
  responseMessage: () => `msg_${random(48, HEX)}`,
  functionCall: () => `fc_${random(48, HEX)}`,
  reasoning: () => `rs_${random(48, HEX)}`,
  compaction: () => `cmp_${random(48, HEX)}`,
  openaiRequest: () => `req_${random(32, HEX)}`,
  anthropicMessage: () => `msg_01${random(22, ALNUM)}`,
  toolUse: () => `toolu_01${random(22, ALNUM)}`,
  anthropicRequest: () => `req_011C${random(20, ALNUM)}`,
  geminiResponse: () => random(22, ALNUM + "-_"),
};

/** Unix seconds, as `created` / `created_at` fields carry. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
