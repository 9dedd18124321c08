import { isIP } from 'node:net';

/**
 * Address policy for the SSRF guard: which IPs a fetch on behalf of the model may connect to.
 * Kept apart from the fetcher so the policy can be table-tested and swapped in tests.
 */

/** IPv4 ranges that are never "the public internet" (IANA special-purpose registry). */
const BLOCKED_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // CGNAT: often the provider's or the cluster's internal network
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, incl. cloud metadata 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, incl. broadcast 255.255.255.255
];

function v4ToInt(ip: string): number | null {
  const parts = ip.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    // Only canonical decimal octets: resolvers and the WHATWG URL parser produce these; anything
    // else (octal, hex) is not something we should guess about.
    if (!/^\d{1,3}$/.test(p)) return null;
    const v = Number(p);
    if (v > 255) return null;
    n = n * 256 + v;
  }
  return n;
}

const BLOCKED_V4_INT = BLOCKED_V4.map(([base, bits]) => {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return { net: (v4ToInt(base)! & mask) >>> 0, mask };
});

function v4Blocked(n: number): boolean {
  return BLOCKED_V4_INT.some(({ net, mask }) => ((n & mask) >>> 0) === net);
}

/** Eight 16-bit groups, or null when not an IPv6 address. Accepts `::` and a dotted IPv4 tail. */
export function parseIPv6(input: string): number[] | null {
  let s = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (isIP(s) !== 6) return null;
  // Rewrite a dotted IPv4 tail (::ffff:127.0.0.1) as two hex groups so one parser handles both.
  const lastColon = s.lastIndexOf(':');
  const last = s.slice(lastColon + 1);
  if (last.includes('.')) {
    const n = v4ToInt(last);
    if (n === null) return null;
    s = `${s.slice(0, lastColon + 1)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const toGroups = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  let groups: number[];
  if (s.includes('::')) {
    const [head, rest] = s.split('::');
    const h = toGroups(head);
    const r = toGroups(rest);
    const fill = 8 - h.length - r.length;
    if (fill < 0) return null;
    groups = [...h, ...new Array<number>(fill).fill(0), ...r];
  } else {
    groups = toGroups(s);
  }
  if (groups.length !== 8 || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return null;
  return groups;
}

function v6Blocked(g: number[]): boolean {
  const embeddedV4 = (hi: number, lo: number) => ((hi << 16) >>> 0) + lo;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  // ::/96 covers :: and ::1 and the deprecated IPv4-compatible form; ::ffff:0:0/96 is IPv4-mapped.
  // Both end up at the IPv4 address, so the IPv4 policy decides.
  if (zeros(0, 6)) return v4Blocked(embeddedV4(g[6], g[7]));
  if (zeros(0, 5) && g[5] === 0xffff) return v4Blocked(embeddedV4(g[6], g[7]));
  if (g[0] === 0x64 && g[1] === 0xff9b) {
    // NAT64 well-known prefix carries the IPv4 target; 64:ff9b:1::/48 is local-use NAT64.
    if (zeros(2, 6)) return v4Blocked(embeddedV4(g[6], g[7]));
    if (g[2] === 1) return true;
  }
  if (g[0] === 0x2002) return v4Blocked(embeddedV4(g[1], g[2])); // 6to4 carries the IPv4 target
  if (g[0] === 0x0100 && zeros(1, 4)) return true; // discard-only 100::/64
  if (g[0] === 0x2001 && g[1] === 0) return true; // Teredo: tunnels to an obfuscated IPv4
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true; // documentation
  if ((g[0] & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((g[0] & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((g[0] & 0xffc0) === 0xfec0) return true; // deprecated site-local fec0::/10
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  return false;
}

/**
 * True when `ip` must not be contacted on behalf of the model: loopback, private, link-local,
 * CGNAT, multicast, reserved, and IPv6 forms that embed such an IPv4. Anything that is not a
 * parseable IP is blocked too (fail closed).
 */
export function isBlockedAddress(ip: string): boolean {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const n = v4ToInt(bare);
  if (n !== null) return v4Blocked(n);
  const g = parseIPv6(bare);
  if (g) return v6Blocked(g);
  return true;
}
