/**
 * The remote fetcher against a real HTTP server on 127.0.0.1. DNS answers come from a
 * stub resolver; only 127.0.0.1/32 is exempted from the private-address block, so every
 * other internal address is refused before any connection is attempted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaConfig, type MediaConfigInput } from '../../src/media/config.js';
import { MediaError } from '../../src/media/errors.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { HTML_PAGE, smallPng } from './helpers/fixtures.js';
import { redirect, serve, startMediaServer, type MediaServer } from './helpers/media-server.js';

const CAP = 64 * 1024;
const DNS: Record<string, string[]> = {
  'media.test': ['127.0.0.1'],
  'other.test': ['127.0.0.1'],
  'internal.test': ['192.168.1.10'],
  'mixed.test': ['127.0.0.1', '10.0.0.7'],
  'v6-internal.test': ['fd00::5'],
  'mapped.test': ['::ffff:127.0.0.2'],
};
const resolverCalls: string[] = [];
async function stubResolve(host: string): Promise<string[]> {
  resolverCalls.push(host);
  const answer = DNS[host];
  if (answer === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return answer;
}

let server: MediaServer;
const png = smallPng();

function fetcher(overrides: MediaConfigInput = {}) {
  const config = resolveMediaConfig({
    allowedDomains: ['media.test', 'other.test', 'internal.test', 'mixed.test', 'v6-internal.test', 'mapped.test', '127.0.0.1', '127.0.0.2'],
    allowPrivateAddresses: ['127.0.0.1/32'],
    maxBytes: { image: CAP },
    totalTimeoutMs: 2000,
    ...overrides,
  });
  return createNodeMediaFetcher(config, { resolve: stubResolve });
}

async function refusal(promise: Promise<unknown>): Promise<MediaError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a refusal, got success');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MediaError);
  return error as MediaError;
}

beforeAll(async () => {
  server = await startMediaServer({
    '/png-as-jpeg': serve(png, 'image/jpeg'),
    '/html-as-png': serve(HTML_PAGE, 'image/png'),
    '/big-with-length': serve(new Uint8Array(CAP + 1).fill(0xff), 'image/png'),
    '/big-chunked': (_req, res) => {
      // No Content-Length: chunks keep coming until the client hangs up (bounded at 4 MB).
      res.writeHead(200, { 'content-type': 'image/png' });
      let sent = 0;
      const pump = () => {
        while (sent < 4 * 1024 * 1024 && !res.destroyed) {
          sent += 16 * 1024;
          if (!res.write(new Uint8Array(16 * 1024).fill(0x89))) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    },
    '/slow': (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      res.write(png.subarray(0, 8)); // then stalls
    },
    '/to-private-ip': redirect('http://10.0.0.1/x.png'),
    '/to-private-name': redirect((req) => `http://internal.test:${req.socket.localPort}/png-as-jpeg`),
    '/to-other-loopback': redirect((req) => `http://127.0.0.2:${req.socket.localPort}/png-as-jpeg`),
    '/to-nip': redirect('http://127.0.0.1.nip.io/x.png'),
    '/to-unlisted': redirect('http://example.org/x.png'),
    '/to-file': redirect('file:///etc/passwd'),
    '/loop-a': redirect('/loop-b'),
    '/loop-b': redirect('/loop-a'),
    '/hop1': redirect('/hop2'),
    '/hop2': redirect('/hop3'),
    '/hop3': redirect('/hop4'),
    '/hop4': redirect('/png-as-jpeg'),
    '/to-png': redirect((req) => `http://other.test:${req.socket.localPort}/png-as-jpeg`, 301),
    '/no-location': (_req, res) => res.writeHead(302).end(),
    '/missing': (_req, res) => res.writeHead(404).end('gone'),
  });
});

afterAll(async () => {
  await server.close();
});

describe('remote media: happy paths', () => {
  it('fetches a PNG served as image/jpeg: the format comes from the bytes', async () => {
    const media = await fetcher().fetch(`http://media.test:${server.port}/png-as-jpeg`, 'image');
    expect(media.format).toBe('png');
    expect(media.bytes).toEqual(png);
    expect(media.contentType).toBe('image/jpeg');
    await server.drained();
  });

  it('connects to the checked address while keeping the name in the Host header', async () => {
    const before = server.hosts.length;
    await fetcher().fetch(`http://media.test:${server.port}/png-as-jpeg`, 'image');
    expect(server.hosts.slice(before)).toEqual([`media.test:${server.port}`]);
  });

  it('follows a redirect to another whitelisted host, re-resolving it', async () => {
    resolverCalls.length = 0;
    const media = await fetcher().fetch(`http://media.test:${server.port}/to-png`, 'image');
    expect(media.finalUrl).toBe(`http://other.test:${server.port}/png-as-jpeg`);
    expect(resolverCalls).toEqual(['media.test', 'other.test']);
  });

  it('follows up to maxRedirects redirects', async () => {
    const media = await fetcher({ maxRedirects: 4 }).fetch(`http://media.test:${server.port}/hop1`, 'image');
    expect(media.format).toBe('png');
  });

  it('accepts a whitelisted IP literal when its address is exempted', async () => {
    const media = await fetcher().fetch(`${server.origin}/png-as-jpeg`, 'image');
    expect(media.format).toBe('png');
  });
});

describe('remote media: refusals', () => {
  it('refuses an HTML page served as image/png', async () => {
    const error = await refusal(fetcher().fetch(`http://media.test:${server.port}/html-as-png`, 'image'));
    expect(error.reason).toBe('format_not_allowed');
    expect(error.message).toContain('HTML');
    await server.drained();
  });

  it('refuses a body over the cap announced by Content-Length, and closes the connection', async () => {
    const error = await refusal(fetcher().fetch(`http://media.test:${server.port}/big-with-length`, 'image'));
    expect(error.reason).toBe('too_large');
    expect(error.message).toContain(`${CAP + 1} bytes`);
    await server.drained();
  });

  it('refuses a chunked body once it passes the cap, without reading the rest', async () => {
    const error = await refusal(fetcher().fetch(`http://media.test:${server.port}/big-chunked`, 'image'));
    expect(error.reason).toBe('too_large');
    await server.drained();
  });

  it('refuses a body that stalls past the total timeout, and closes the connection', async () => {
    const started = Date.now();
    const error = await refusal(fetcher({ totalTimeoutMs: 300 }).fetch(`http://media.test:${server.port}/slow`, 'image'));
    expect(error.reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2000);
    await server.drained();
  });

  it('refuses a whitelisted name that resolves to a private address, without connecting', async () => {
    const accepted = server.accepted();
    const error = await refusal(fetcher().fetch(`http://internal.test:${server.port}/png-as-jpeg`, 'image'));
    expect(error.reason).toBe('private_address');
    expect(error.message).toContain('192.168.1.10');
    expect(server.accepted()).toBe(accepted);
  });

  it('refuses a name whose answers mix an allowed and a private address', async () => {
    const error = await refusal(fetcher().fetch(`http://mixed.test:${server.port}/png-as-jpeg`, 'image'));
    expect(error.reason).toBe('private_address');
    expect(error.message).toContain('10.0.0.7');
  });

  it('refuses names resolving to an IPv6 unique-local or an IPv4-mapped loopback address', async () => {
    const ula = await refusal(fetcher().fetch(`http://v6-internal.test:${server.port}/x`, 'image'));
    expect(ula.reason).toBe('private_address');
    expect(ula.message).toContain('unique local');
    const mapped = await refusal(fetcher().fetch(`http://mapped.test:${server.port}/x`, 'image'));
    expect(mapped.reason).toBe('private_address');
    expect(mapped.message).toContain('loopback');
  });

  it('refuses a name that does not resolve', async () => {
    const error = await refusal(fetcher({ allowedDomains: ['nowhere.test'] }).fetch('http://nowhere.test/x.png', 'image'));
    expect(error.reason).toBe('dns_failure');
  });

  it('refuses a redirect from an allowed host to a private IP', async () => {
    const error = await refusal(fetcher({ allowedDomains: ['media.test', '10.0.0.1'] }).fetch(`http://media.test:${server.port}/to-private-ip`, 'image'));
    expect(error.reason).toBe('redirect_refused');
    expect(error.message).toContain('10.0.0.1 is private');
    await server.drained();
  });

  it('refuses a redirect to a whitelisted name that resolves to a private address', async () => {
    const error = await refusal(fetcher().fetch(`http://media.test:${server.port}/to-private-name`, 'image'));
    expect(error.reason).toBe('redirect_refused');
    expect(error.message).toContain('192.168.1.10');
  });

  it('refuses a redirect to a loopback address outside the exemption', async () => {
    const accepted = server.accepted();
    const error = await refusal(fetcher().fetch(`http://media.test:${server.port}/to-other-loopback`, 'image'));
    expect(error.reason).toBe('redirect_refused');
    expect(error.message).toContain('loopback');
    expect(server.accepted()).toBe(accepted + 1);
  });

  it('refuses redirects to a wildcard-DNS name, an unlisted host and a file: URL', async () => {
    const nip = await refusal(fetcher().fetch(`http://media.test:${server.port}/to-nip`, 'image'));
    expect(nip.message).toContain('nip.io');
    const unlisted = await refusal(fetcher().fetch(`http://media.test:${server.port}/to-unlisted`, 'image'));
    expect(unlisted.message).toContain('not in ALLOWED_MEDIA_DOMAINS_ENV');
    const file = await refusal(fetcher().fetch(`http://media.test:${server.port}/to-file`, 'image'));
    expect(file.reason).toBe('redirect_refused');
    expect(file.message).toContain('file:');
  });

  it('refuses a redirect loop', async () => {
    const error = await refusal(fetcher({ maxRedirects: 10 }).fetch(`http://media.test:${server.port}/loop-a`, 'image'));
    expect(error.reason).toBe('redirect_refused');
    expect(error.message).toContain('loop');
    await server.drained();
  });

  it('refuses more redirects than maxRedirects', async () => {
    const error = await refusal(fetcher({ maxRedirects: 3 }).fetch(`http://media.test:${server.port}/hop1`, 'image'));
    expect(error.reason).toBe('redirect_refused');
    expect(error.message).toContain('more than 3 redirects');
  });

  it('refuses a redirect without Location and a non-200 answer', async () => {
    expect((await refusal(fetcher().fetch(`http://media.test:${server.port}/no-location`, 'image'))).reason).toBe('redirect_refused');
    const missing = await refusal(fetcher().fetch(`http://media.test:${server.port}/missing`, 'image'));
    expect(missing.reason).toBe('http_status');
    expect(missing.message).toContain('404');
    await server.drained();
  });

  it('refuses nip.io and sslip.io names even when whitelisted, before resolving them', async () => {
    resolverCalls.length = 0;
    const wildcard = fetcher({ allowedDomains: ['127.0.0.1.nip.io', '.sslip.io'] });
    const nip = await refusal(wildcard.fetch('http://127.0.0.1.nip.io/x.png', 'image'));
    expect(nip.reason).toBe('wildcard_dns');
    const sslip = await refusal(wildcard.fetch('https://10-0-0-1.sslip.io/x.png', 'image'));
    expect(sslip.reason).toBe('wildcard_dns');
    expect(sslip.message).toContain('sslip.io');
    expect(resolverCalls).toEqual([]);
  });

  it('refuses a host missing from the whitelist, and everything remote when the list is empty', async () => {
    const unlisted = await refusal(fetcher().fetch('http://example.org/x.png', 'image'));
    expect(unlisted.reason).toBe('host_not_allowed');
    const empty = await refusal(fetcher({ allowedDomains: [] }).fetch(`http://media.test:${server.port}/png-as-jpeg`, 'image'));
    expect(empty.message).toContain('remote media is disabled');
  });

  it('passes the caller abort through as the abort reason, not as a 400', async () => {
    const controller = new AbortController();
    const pending = fetcher({ totalTimeoutMs: 5000 }).fetch(`http://media.test:${server.port}/slow`, 'image', controller.signal);
    setTimeout(() => controller.abort(new Error('client went away')), 100);
    await expect(pending).rejects.toThrow('client went away');
    await server.drained();
  });

  it('leaves no connection open after the refusals above', async () => {
    await server.drained();
  });
});
