/**
 * Node transport: node:http / node:https with a `lookup` that returns the address the
 * fetcher checked, so the connection goes exactly there (no DNS-rebinding window between
 * check and connect) while the Host header, SNI and certificate check keep the name.
 * One connection per request (agent: false): nothing pooled stays open after a refusal.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { lookup } from 'node:dns/promises';
import type { Resolver } from './remote-fetch.js';
import { ConnectTimeoutError, type Transport, type TransportRequest, type TransportResponse } from './transport.js';

export interface NodeTransportOptions {
  /** Extra TLS settings (e.g. a test CA). */
  tls?: Pick<https.RequestOptions, 'ca' | 'rejectUnauthorized'>;
}

/** Every address the system resolver (getaddrinfo, /etc/hosts included) returns for `host`. */
export const nodeResolve: Resolver = async (host) => {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

function pinnedLookup(address: string): LookupFunction {
  const family = isIP(address);
  // With autoSelectFamily (Node 20's default) net asks for `all` addresses.
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

function headerValue(res: http.IncomingMessage, name: string): string | null {
  const value = res.headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}

function requestOnce(req: TransportRequest, options: NodeTransportOptions): Promise<TransportResponse> {
  const { url, signal } = req;
  const secure = url.protocol === 'https:';
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const isLiteral = isIP(hostname) !== 0;
  const client = secure ? https : http;

  return new Promise<TransportResponse>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const request = client.request({
      protocol: url.protocol,
      hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      headers: req.headers,
      agent: false,
      ...(req.address !== null && !isLiteral ? { lookup: pinnedLookup(req.address) } : {}),
      ...(secure ? { ...options.tls, ...(isLiteral ? {} : { servername: hostname }) } : {}),
    });
    const onAbort = () => request.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => signal.removeEventListener('abort', onAbort);
    request.once('close', cleanup);

    request.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => request.destroy(new ConnectTimeoutError(req.connectTimeoutMs)), req.connectTimeoutMs);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    request.on('error', reject);
    request.on('response', (res) => {
      resolve({
        status: res.statusCode ?? 0,
        header: (name) => headerValue(res, name),
        body: res,
        cancel: () => {
          res.destroy();
          request.destroy();
          cleanup();
        },
      });
    });
    request.end();
  });
}

export function createNodeTransport(options: NodeTransportOptions = {}): Transport {
  return { pinsAddress: true, request: (req) => requestOnce(req, options) };
}
