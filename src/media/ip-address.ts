/**
 * Strict parsing of IP address text into bytes. Only the canonical forms are accepted:
 * dotted-decimal IPv4 with four parts, and RFC 4291 IPv6 text (optionally bracketed,
 * optionally ending in a dotted IPv4). Exotic IPv4 spellings (2130706433, 0177.0.0.1,
 * 0x7f.1, 127.1) are not parsed here on purpose: URL hosts reach this module already
 * normalised by the WHATWG URL parser, and resolver answers are canonical. Anything else
 * is "not an address", which callers treat as a refusal (fail closed).
 */

export interface IpAddress {
  version: 4 | 6;
  /** 4 bytes for IPv4, 16 for IPv6, network order. */
  bytes: Uint8Array;
}

const DECIMAL_OCTET = /^(0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

export function parseIPv4(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!DECIMAL_OCTET.test(parts[i])) return null;
    const value = Number(parts[i]);
    if (value > 255) return null;
    bytes[i] = value;
  }
  return bytes;
}

function parseGroups(text: string, allowTrailingIPv4: boolean): number[] | null {
  if (text === '') return [];
  const pieces = text.split(':');
  const groups: number[] = [];
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i];
    if (allowTrailingIPv4 && i === pieces.length - 1 && piece.includes('.')) {
      const v4 = parseIPv4(piece);
      if (v4 === null) return null;
      groups.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
    } else if (HEX_GROUP.test(piece)) {
      groups.push(parseInt(piece, 16));
    } else {
      return null;
    }
  }
  return groups;
}

export function parseIPv6(text: string): Uint8Array | null {
  let body = text;
  if (body.startsWith('[') && body.endsWith(']')) body = body.slice(1, -1);
  // Zone identifiers (fe80::1%eth0) name an interface, never a remote host.
  if (body.includes('%') || body.length === 0) return null;
  const halves = body.split('::');
  if (halves.length > 2) return null;
  let groups: number[];
  if (halves.length === 2) {
    const head = parseGroups(halves[0], false);
    const tail = parseGroups(halves[1], true);
    if (head === null || tail === null || head.length + tail.length > 7) return null;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    const all = parseGroups(body, true);
    if (all === null || all.length !== 8) return null;
    groups = all;
  }
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}

/** Parses IPv4 or IPv6 text (brackets allowed around IPv6); null when it is neither. */
export function parseIp(text: string): IpAddress | null {
  const v4 = parseIPv4(text);
  if (v4 !== null) return { version: 4, bytes: v4 };
  if (!text.includes(':')) return null;
  const v6 = parseIPv6(text);
  return v6 === null ? null : { version: 6, bytes: v6 };
}

export function formatIp(ip: IpAddress): string {
  if (ip.version === 4) return Array.from(ip.bytes).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i] << 8) | ip.bytes[i + 1]).toString(16));
  return groups.join(':');
}

/** True when the first `prefixLength` bits of `a` and `b` are equal. */
export function samePrefix(a: Uint8Array, b: Uint8Array, prefixLength: number): boolean {
  const fullBytes = prefixLength >> 3;
  for (let i = 0; i < fullBytes; i++) if (a[i] !== b[i]) return false;
  const restBits = prefixLength & 7;
  if (restBits === 0) return true;
  const mask = (0xff << (8 - restBits)) & 0xff;
  return (a[fullBytes] & mask) === (b[fullBytes] & mask);
}

export interface Cidr {
  version: 4 | 6;
  network: Uint8Array;
  prefixLength: number;
  /** The text it was parsed from, for messages. */
  text: string;
}

/** "10.0.0.0/8", "fc00::/7", or a single address (a /32 or /128). Null when malformed. */
export function parseCidr(text: string): Cidr | null {
  const slash = text.lastIndexOf('/');
  const addressText = slash === -1 ? text : text.slice(0, slash);
  const ip = parseIp(addressText.trim());
  if (ip === null) return null;
  const maxBits = ip.version === 4 ? 32 : 128;
  let prefixLength = maxBits;
  if (slash !== -1) {
    const lengthText = text.slice(slash + 1).trim();
    if (!/^[0-9]{1,3}$/.test(lengthText)) return null;
    prefixLength = Number(lengthText);
    if (prefixLength > maxBits) return null;
  }
  return { version: ip.version, network: ip.bytes, prefixLength, text: text.trim() };
}

export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  return cidr.version === ip.version && samePrefix(cidr.network, ip.bytes, cidr.prefixLength);
}
