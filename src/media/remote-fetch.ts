/**
 * GET of a remote media URL with every hop checked before it is connected to:
 * scheme (http/https, no https→http downgrade), no credentials, not a wildcard-DNS or
 * special-use name, host on the whitelist, and the address (the IP literal, or every
 * address the name resolves to) outside loopback/private/reserved ranges. Redirects are
 * followed by hand, at most `maxRedirects`, and a URL seen before is a loop.
 */
import { readCappedBody } from './body-reader.js';
import { mediaError, type MediaRefusalReason } from './errors.js';
import type { AddressPolicy } from './address-policy.js';
import { isIpLiteralHost, refusedHostReason, urlHost, type HostWhitelist } from './host-policy.js';
import { formatIp, parseIp } from './ip-address.js';
import { preview } from './media-ref.js';
import type { Transport, TransportResponse } from './transport.js';

/** Resolves a host name to IP address strings (all of them: each one is checked). */
export type Resolver = (host: string, signal: AbortSignal) => Promise<string[]>;

export interface RemoteFetchPolicy {
  whitelist: HostWhitelist;
  addresses: AddressPolicy;
  extraRefusedSuffixes: readonly string[];
  /** Absent where the runtime resolves names itself (fetch API): then only IP literals are checked. */
  resolve?: Resolver;
  transport: Transport;
  maxRedirects: number;
  connectTimeoutMs: number;
}

export interface RemoteBody {
  bytes: Uint8Array;
  finalUrl: string;
  contentType?: string;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const REQUEST_HEADERS = {
  accept: 'image/*, audio/*, video/*, */*;q=0.1',
  // The body's size is capped and its format sniffed: no transparent decompression.
  'accept-encoding': 'identity',
  'user-agent': 'edge-llm-media-fetcher',
};

/** The address to connect to for this hop, after every check; null lets the runtime resolve. */
async function checkHop(url: URL, policy: RemoteFetchPolicy, signal: AbortSignal, redirected: boolean): Promise<string | null> {
  const refuse = (reason: MediaRefusalReason, message: string) =>
    mediaError(redirected ? 'redirect_refused' : reason, redirected ? `a redirect to ${preview(url.href)} was refused: ${message}` : message);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse('scheme_not_allowed', `the URL scheme "${url.protocol}" is not allowed (only http and https)`);
  }
  if (url.username !== '' || url.password !== '') throw refuse('malformed_part', 'URLs with credentials (user:password@) are not allowed');
  const host = urlHost(url);
  const refusedName = refusedHostReason(host, policy.extraRefusedSuffixes);
  if (refusedName !== null) throw refuse('wildcard_dns', refusedName);
  if (!policy.whitelist.allows(host)) {
    const hint = policy.whitelist.entries.length === 0 ? ' (the list is empty: remote media is disabled)' : '';
    throw refuse('host_not_allowed', `the host "${host}" is not in ALLOWED_MEDIA_DOMAINS_ENV${hint}`);
  }
  if (isIpLiteralHost(host)) {
    const ip = parseIp(host);
    if (ip === null) throw refuse('private_address', `the host "${host}" is not a usable IP address`);
    const range = policy.addresses.refusal(ip);
    if (range !== null) throw refuse('private_address', `the address ${host} is ${range}; only public addresses are allowed`);
    return formatIp(ip);
  }
  if (policy.resolve === undefined) return null;
  let answers: string[];
  try {
    answers = await untilAborted(policy.resolve(host, signal), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw refuse('dns_failure', `the host "${host}" could not be resolved`);
  }
  if (answers.length === 0) throw refuse('dns_failure', `the host "${host}" has no address`);
  // Every answer must pass: a name mixing public and internal addresses is refused as a whole.
  let first: string | null = null;
  for (const answer of answers) {
    const ip = parseIp(answer);
    if (ip === null) throw refuse('dns_failure', `the host "${host}" resolved to an invalid address "${preview(answer, 60)}"`);
    const range = policy.addresses.refusal(ip);
    if (range !== null) {
      throw refuse('private_address', `the host "${host}" resolves to ${answer}, which is ${range}; only public addresses are allowed`);
    }
    first ??= formatIp(ip);
  }
  return first;
}

/** `promise`, or a rejection as soon as `signal` aborts (a resolver may ignore the signal). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function canonicalHref(url: URL): string {
  const copy = new URL(url.href);
  copy.hash = '';
  return copy.href;
}

/** Fetches `start` under `policy`; `signal` carries the caller's abort and the total timeout. */
export async function fetchRemote(start: URL, cap: number, what: string, policy: RemoteFetchPolicy, signal: AbortSignal): Promise<RemoteBody> {
  const seen = new Set<string>();
  let url = start;
  for (let hop = 0; ; hop++) {
    seen.add(canonicalHref(url));
    const address = await checkHop(url, policy, signal, hop > 0);
    const response: TransportResponse = await policy.transport.request({
      url,
      address,
      headers: REQUEST_HEADERS,
      signal,
      connectTimeoutMs: policy.connectTimeoutMs,
    });
    if (REDIRECT_STATUSES.has(response.status)) {
      response.cancel();
      url = nextHop(url, response, hop, policy.maxRedirects, seen);
      continue;
    }
    if (response.status !== 200) {
      response.cancel();
      throw mediaError('http_status', `the media server answered HTTP ${response.status} for ${preview(url.href)}`);
    }
    const bytes = await readCappedBody(response, cap, what);
    return { bytes, finalUrl: url.href, contentType: response.header('content-type') ?? undefined };
  }
}

function nextHop(url: URL, response: TransportResponse, hop: number, maxRedirects: number, seen: Set<string>): URL {
  const location = response.header('location');
  if (location === null || location.trim() === '') {
    throw mediaError('redirect_refused', `the media server answered HTTP ${response.status} without a Location`);
  }
  if (hop + 1 > maxRedirects) throw mediaError('redirect_refused', `more than ${maxRedirects} redirects`);
  let next: URL;
  try {
    next = new URL(location, url);
  } catch {
    throw mediaError('redirect_refused', `the redirect Location "${preview(location)}" is not a valid URL`);
  }
  if (url.protocol === 'https:' && next.protocol === 'http:') {
    throw mediaError('redirect_refused', `a redirect from https to http (${preview(next.href)}) was refused`);
  }
  if (seen.has(canonicalHref(next))) throw mediaError('redirect_refused', `redirect loop: ${preview(next.href)} was already visited`);
  return next;
}
