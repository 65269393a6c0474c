/**
 * The Host header check against DNS rebinding: a page on attacker.example whose name is
 * re-pointed at 127.0.0.1 reaches a local server with `Host: attacker.example`, so a
 * server that only answers to the names it is known by cannot be read that way. IP
 * literals always pass: rebinding needs a name, and a page served from an IP address is
 * already same-origin with that address.
 */

/** The host part of a Host header (port and IPv6 brackets removed), lower-cased, without a trailing dot. */
export function hostName(header: string): string {
  let host = header.trim().toLowerCase();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end === -1 ? host : host.slice(0, end + 1);
  }
  const colon = host.lastIndexOf(':');
  if (colon !== -1) host = host.slice(0, colon);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

function isIpLiteral(host: string): boolean {
  if (host.startsWith('[') && host.endsWith(']')) return true;
  return /^(\d{1,3})(\.\d{1,3}){3}$/.test(host);
}

/**
 * Whether `header` names an allowed host. Entries: a name ("llm.example.com"), a domain
 * and its subdomains (".example.com"), or "*" (any).
 */
export function hostAllowed(header: string | null, allowed: readonly string[]): boolean {
  if (allowed.includes('*')) return true;
  if (header === null || header.trim() === '') return false;
  const host = hostName(header);
  if (isIpLiteral(host)) return true;
  return allowed.some((entry) => {
    const name = entry.trim().toLowerCase().replace(/\.$/, '');
    if (name.startsWith('.')) return host === name.slice(1) || host.endsWith(name);
    return host === name;
  });
}

function isLoopbackAddress(address: string): boolean {
  const host = address.trim().toLowerCase().replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * The hosts to accept when `allowedHosts` is not set: a server listening on a loopback
 * address is only for this machine, so only loopback names (and IP literals) reach it;
 * one listening on another address is meant to be reached under names this server
 * cannot guess, so no check (an API key protects it; set allowedHosts to add the check).
 */
export function defaultAllowedHosts(listenHost: string): string[] | null {
  return isLoopbackAddress(listenHost) ? ['localhost', '.localhost'] : null;
}
