/**
 * SHA-256 in plain JavaScript, for the client key of every request (and the config digest).
 * `node:crypto` gives the same digest but slows the rest of the request measurably
 * (docs/performance.md); Web Crypto's digest is async (an op round trip). Scratch buffers are reused:
 * allocating a typed array costs more here than hashing a short key.
 */
// deno-fmt-ignore
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
// deno-fmt-ignore
const INITIAL = [
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

const encoder = new TextEncoder();
const w = new Int32Array(64);
const h = new Int32Array(8);
let scratch = new Uint8Array(256);
let view = new DataView(scratch.buffer);

/** The SHA-256 digest of `text`'s UTF-8 bytes. */
export function sha256(text: string): Uint8Array {
  // Message, 0x80, zero padding, then the bit length in the last 8 bytes of a 64-byte block.
  const blocksLength = Math.ceil((text.length * 3 + 9) / 64) * 64;
  if (blocksLength > scratch.length) {
    scratch = new Uint8Array(blocksLength);
    view = new DataView(scratch.buffer);
  }
  const { written: size } = encoder.encodeInto(text, scratch);
  const end = Math.ceil((size + 9) / 64) * 64;
  scratch.fill(0, size, end);
  scratch[size] = 0x80;
  view.setUint32(end - 8, Math.floor(size / 0x20000000));
  view.setUint32(end - 4, size * 8);
  h.set(INITIAL);
  for (let at = 0; at < end; at += 64) compress(at);
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setInt32(i * 4, h[i]);
  return out;
}

function compress(at: number): void {
  for (let i = 0; i < 16; i++) w[i] = view.getInt32(at + i * 4);
  for (let i = 16; i < 64; i++) {
    const x = w[i - 15], y = w[i - 2];
    const s0 = ror(x, 7) ^ ror(x, 18) ^ (x >>> 3);
    const s1 = ror(y, 17) ^ ror(y, 19) ^ (y >>> 10);
    w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
  }
  let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (let i = 0; i < 64; i++) {
    const t1 = (k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
    const t2 = ((ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    k = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

const ror = (x: number, n: number) => (x >>> n) | (x << (32 - n));
