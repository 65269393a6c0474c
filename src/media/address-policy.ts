/**
 * Which IP addresses a media fetch may connect to: public unicast only, unless the
 * operator exempts ranges explicitly (MediaConfig.allowPrivateAddresses).
 *
 * IPv4 uses a deny list of the IANA special-purpose ranges. IPv6 is allow-listed to
 * global unicast (2000::/3) minus its special blocks, so anything new or odd outside it
 * (IPv4-compatible ::a.b.c.d, site-local, ...) is refused by default. Addresses that embed
 * an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) are
 * judged by the embedded address, so ::ffff:127.0.0.1 is loopback.
 */
import { cidrContains, formatIp, parseCidr, type Cidr, type IpAddress } from './ip-address.js';

interface NamedRange {
  cidr: Cidr;
  name: string;
}

function ranges(entries: readonly [string, string][]): NamedRange[] {
  return entries.map(([text, name]) => {
    const cidr = parseCidr(text);
    if (cidr === null) throw new Error(`bad built-in range ${text}`);
    return { cidr, name };
  });
}

// Most specific first: the first match names the refusal.
const BLOCKED_V4 = ranges([
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/8', 'unspecified ("this network")'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay anycast'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
]);

const BLOCKED_V6 = ranges([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'IPv4-compatible (deprecated)'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['100::/64', 'discard-only'],
  ['2001::/32', 'Teredo'],
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'IETF protocol assignments'],
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'unique local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['ff00::/8', 'multicast'],
]);

const GLOBAL_UNICAST_V6 = parseCidr('2000::/3')!;
const IPV4_MAPPED = parseCidr('::ffff:0:0/96')!;
const NAT64_WELL_KNOWN = parseCidr('64:ff9b::/96')!;
const SIX_TO_FOUR = parseCidr('2002::/16')!;

/** The IPv4 address an IPv6 address carries by a translation scheme, with its scheme's name. */
export function embeddedIPv4(ip: IpAddress): { v4: IpAddress; scheme: string } | null {
  if (ip.version !== 6) return null;
  if (cidrContains(IPV4_MAPPED, ip)) return { v4: { version: 4, bytes: ip.bytes.slice(12, 16) }, scheme: 'IPv4-mapped' };
  if (cidrContains(NAT64_WELL_KNOWN, ip)) return { v4: { version: 4, bytes: ip.bytes.slice(12, 16) }, scheme: 'NAT64' };
  if (cidrContains(SIX_TO_FOUR, ip)) return { v4: { version: 4, bytes: ip.bytes.slice(2, 6) }, scheme: '6to4' };
  return null;
}

/** The name of the special-purpose range `ip` lies in, or null for a public unicast address. */
export function specialRangeOf(ip: IpAddress): string | null {
  if (ip.version === 4) return BLOCKED_V4.find((r) => cidrContains(r.cidr, ip))?.name ?? null;
  const embedded = embeddedIPv4(ip);
  if (embedded !== null) {
    const inner = specialRangeOf(embedded.v4);
    return inner === null ? null : `${embedded.scheme} ${inner} (${formatIp(embedded.v4)})`;
  }
  const named = BLOCKED_V6.find((r) => cidrContains(r.cidr, ip));
  if (named !== undefined) return named.name;
  return cidrContains(GLOBAL_UNICAST_V6, ip) ? null : 'reserved (outside global unicast 2000::/3)';
}

export type PrivateAddressExemption = boolean | readonly string[];

export interface AddressPolicy {
  /** Null when a connection to `ip` is allowed, else the reason (the range's name). */
  refusal(ip: IpAddress): string | null;
}

/**
 * `exempt`: false blocks every special range; true allows everything (tests, trusted
 * networks); a list of CIDRs ("127.0.0.1/32", "10.1.0.0/16") allows only those.
 */
export function createAddressPolicy(exempt: PrivateAddressExemption): AddressPolicy {
  if (exempt === true) return { refusal: () => null };
  const cidrs = (exempt === false ? [] : exempt).map((text) => {
    const cidr = parseCidr(text);
    if (cidr === null) throw new Error(`allowPrivateAddresses: "${text}" is not an IP address or CIDR range`);
    return cidr;
  });
  const isExempt = (ip: IpAddress) => {
    const inner = embeddedIPv4(ip)?.v4;
    return cidrs.some((c) => cidrContains(c, ip) || (inner !== undefined && cidrContains(c, inner)));
  };
  return {
    refusal(ip) {
      const range = specialRangeOf(ip);
      if (range === null || isExempt(ip)) return null;
      return range;
    },
  };
}
