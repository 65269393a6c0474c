/**
 * Which client address a request's limits count against (issue 41, family 12). A header a
 * client can write is no address: outside Cloudflare, `CF-Connecting-IP: <random>` on each
 * request passed a 3-per-minute limit 6 times of 6. An address is read only from a header
 * the platform, or a proxy the operator names as trusted, has set:
 *
 * - `cloudflare` (the default): CF-Connecting-IP, only on a request Cloudflare's runtime
 *   delivered (it carries the platform's `cf` object, which no client can send; Cloudflare
 *   overwrites the header);
 * - `x-forwarded-for:N`: behind N proxies of the operator's own, the address the outermost
 *   of them saw: the Nth entry of X-Forwarded-For from the right (the entries left of it are
 *   the client's to write);
 * - `none`: no address (every unauthenticated client shares one budget).
 *
 * Setting: GATEWAY_TRUSTED_PROXY.
 */
export type TrustedProxy = { kind: 'cloudflare' } | { kind: 'forwarded'; hops: number } | { kind: 'none' };

export const DEFAULT_TRUSTED_PROXY: TrustedProxy = { kind: 'cloudflare' };

/** Reads GATEWAY_TRUSTED_PROXY; throws naming the accepted forms. */
export function trustedProxyFrom(value: unknown): TrustedProxy {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) return DEFAULT_TRUSTED_PROXY;
  const text = String(value).trim().toLowerCase();
  if (text === 'cloudflare') return { kind: 'cloudflare' };
  if (text === 'none') return { kind: 'none' };
  const match = /^x-forwarded-for:(\d{1,2})$/.exec(text);
  if (match !== null && Number(match[1]) >= 1) return { kind: 'forwarded', hops: Number(match[1]) };
  throw new Error(`GATEWAY_TRUSTED_PROXY must be "cloudflare", "none" or "x-forwarded-for:N" (N trusted proxies, 1 or more), got ${JSON.stringify(value)}.`);
}

/** Characters of an address kept as a key (an IPv6 address with a zone is under 64). */
const MAX_ADDRESS_CHARS = 64;

function cleanAddress(value: string | undefined | null): string | null {
  const address = value?.trim() ?? '';
  if (address === '' || address.length > MAX_ADDRESS_CHARS || !/^[0-9A-Za-z.:%_-]+$/.test(address)) return null;
  return address.toLowerCase();
}

/** The client's address by the trusted proxy's word, or null when no trusted header gives one. */
export function clientAddress(request: Request, trust: TrustedProxy): string | null {
  switch (trust.kind) {
    case 'none':
      return null;
    case 'cloudflare': {
      const cf = (request as Request & { cf?: unknown }).cf;
      if (cf === null || typeof cf !== 'object') return null;
      return cleanAddress(request.headers.get('cf-connecting-ip'));
    }
    case 'forwarded': {
      const entries = (request.headers.get('x-forwarded-for') ?? '').split(',');
      if (entries.length < trust.hops) return null;
      return cleanAddress(entries[entries.length - trust.hops]);
    }
  }
}
