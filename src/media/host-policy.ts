/**
 * Which host names a media URL may name: the ALLOWED_MEDIA_DOMAINS_ENV whitelist, minus
 * wildcard-DNS services and special-use names that are refused even when whitelisted.
 *
 * Whitelist entries:
 *   "media.example.com"   exactly that host;
 *   ".example.com" or "*.example.com"   any subdomain of example.com (not example.com
 *                         itself: list it as well to allow both);
 *   "203.0.113.7", "::1", "[2001:db8::1]"   that IP address literal.
 * Entries and URL hosts are compared after the WHATWG URL parser's host normalisation
 * (lower case, punycode, IPv4 in dotted decimal, IPv6 compressed), with one trailing dot
 * dropped, so "MEDIA.Example.com." matches "media.example.com" and "0x7f.1" matches
 * "127.0.0.1". Ports are not part of an entry: a whitelisted host is allowed on any port.
 */

/** Services whose names resolve to any address written in them (1.2.3.4.nip.io → 1.2.3.4). */
export const WILDCARD_DNS_SUFFIXES: readonly string[] = [
  'nip.io',
  'sslip.io',
  'xip.io',
  'xip.name',
  'traefik.me',
  'localtest.me',
  'lvh.me',
  'vcap.me',
  'lacolhost.com',
  'localho.st',
];

/** RFC 6761 names that mean this machine: never a media server. */
const SPECIAL_USE_SUFFIXES: readonly string[] = ['localhost'];

function stripTrailingDot(host: string): string {
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

/**
 * The WHATWG-normalised form of a bare host ("Example.COM", "0x7f.1", "::1"), without
 * brackets' ambiguity: IPv6 comes back bracketed. Null when the text is not a host.
 */
export function normaliseHost(text: string): string | null {
  let host = text.trim();
  if (host === '' || /[\s/?#@\\]/.test(host)) return null;
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  try {
    const url = new URL(`http://${host}/`);
    if (url.port !== '') return null;
    return stripTrailingDot(url.hostname);
  } catch {
    return null;
  }
}

/** The URL's host in the form whitelist entries are compared with. */
export function urlHost(url: URL): string {
  return stripTrailingDot(url.hostname);
}

export function isIpLiteralHost(host: string): boolean {
  return host.startsWith('[') || /^[0-9]+(\.[0-9]+){3}$/.test(host);
}

function matchesSuffix(host: string, suffix: string): boolean {
  return host === suffix || host.endsWith(`.${suffix}`);
}

export interface HostWhitelist {
  allows(host: string): boolean;
  /** The normalised entries, for messages and logs. */
  readonly entries: readonly string[];
}

/** Throws on an entry that is not a host name or IP address (a config error, at start-up). */
export function createHostWhitelist(entries: readonly string[]): HostWhitelist {
  const exact = new Set<string>();
  const suffixes: string[] = [];
  const normalised: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    if (entry === '') continue;
    const subdomains = entry.startsWith('.') || entry.startsWith('*.');
    const hostText = subdomains ? entry.slice(entry.indexOf('.') + 1) : entry;
    const host = normaliseHost(hostText);
    if (host === null || (subdomains && isIpLiteralHost(host))) {
      throw new Error(
        `ALLOWED_MEDIA_DOMAINS_ENV: "${raw}" is not a host name, ".domain" or IP address (ports, paths and schemes are not allowed)`,
      );
    }
    if (subdomains) suffixes.push(host);
    else exact.add(host);
    normalised.push(subdomains ? `.${host}` : host);
  }
  return {
    entries: normalised,
    allows(host) {
      if (exact.has(host)) return true;
      return suffixes.some((suffix) => host.endsWith(`.${suffix}`));
    },
  };
}

/** Why a host is refused whatever the whitelist says, or null. */
export function refusedHostReason(host: string, extraSuffixes: readonly string[] = []): string | null {
  if (isIpLiteralHost(host)) return null;
  const wildcard = [...WILDCARD_DNS_SUFFIXES, ...extraSuffixes].find((s) => matchesSuffix(host, s));
  if (wildcard !== undefined) {
    return `"${host}" belongs to ${wildcard}, a wildcard-DNS service that resolves to any address; such domains are never allowed`;
  }
  const special = SPECIAL_USE_SUFFIXES.find((s) => matchesSuffix(host, s));
  if (special !== undefined) return `"${host}" is a special-use name for this machine; put local media in the media directory instead`;
  return null;
}
