/**
 * Which peers may say who the client is. `X-Forwarded-For` is believed only from a trusted
 * proxy (Kong), and read from the right: each trusted hop appended its peer, so the right-most
 * address that is not a trusted proxy is the client. Anything to its left the client wrote.
 */

interface Ip {
  value: bigint;
  bits: 32 | 128;
}

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) {
    return undefined;
  }
  return parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n);
}

function parseIpv6(text: string): bigint | undefined {
  let head = text;
  let tail4: bigint | undefined;
  // An embedded IPv4 tail (::ffff:1.2.3.4) stands for the last two groups.
  const v4 = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    tail4 = parseIpv4(v4[2]);
    if (tail4 === undefined) return undefined;
    head = v4[1] + "0:0";
  }
  const halves = head.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groups(halves[0]);
  const right = halves.length === 2 ? groups(halves[1]) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...left, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...right];
  if (!all.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  const value = all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
  return tail4 === undefined ? value : (value & ~0xffffffffn) | tail4;
}

const MAPPED_V4 = 0xffffn << 32n;

function parseIp(text: string): Ip | undefined {
  const t = text.trim().replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  const v4 = parseIpv4(t);
  if (v4 !== undefined) return { value: v4, bits: 32 };
  const v6 = parseIpv6(t);
  if (v6 === undefined) return undefined;
  // An IPv4 peer on a dual-stack socket shows as ::ffff:a.b.c.d.
  if (v6 >> 32n === 0xffffn) return { value: v6 & ~MAPPED_V4, bits: 32 };
  return { value: v6, bits: 128 };
}

interface Range {
  ip: Ip;
  prefix: number;
}

function parseRange(text: string): Range | undefined {
  const [addr, len, ...rest] = text.split("/");
  const ip = parseIp(addr);
  if (!ip || rest.length) return undefined;
  if (len === undefined) return { ip, prefix: ip.bits };
  if (!/^\d{1,3}$/.test(len) || Number(len) > ip.bits) return undefined;
  return { ip, prefix: Number(len) };
}

export const isAddressOrCidr = (text: string) => parseRange(text) !== undefined;

function inRange(ip: Ip, r: Range): boolean {
  if (ip.bits !== r.ip.bits) return false;
  const shift = BigInt(ip.bits - r.prefix);
  return ip.value >> shift === r.ip.value >> shift;
}

export class TrustedProxies {
  private readonly ranges: Range[];

  constructor(list: readonly string[]) {
    this.ranges = list.map(parseRange).filter((r): r is Range => r !== undefined);
  }

  trusts(address: string): boolean {
    const ip = parseIp(address);
    return ip !== undefined && this.ranges.some((r) => inRange(ip, r));
  }

  /** The client's address: the peer, unless a trusted proxy forwarded the request for it. */
  clientIp(peer: string | undefined, forwardedFor: string | null): string | undefined {
    if (peer === undefined || !forwardedFor || !this.trusts(peer)) return peer;
    const hops = forwardedFor.split(",").map((h) => h.trim()).filter(Boolean);
    for (let i = hops.length - 1; i >= 0; i--) {
      if (!this.trusts(hops[i])) return parseIp(hops[i]) ? hops[i] : peer;
    }
    // Every hop is a trusted proxy: the left-most one is as close to the client as we know.
    return hops[0] ?? peer;
  }
}
