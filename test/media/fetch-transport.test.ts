/**
 * The runtime-neutral path (fetch API, as in workerd): no resolver, so only the
 * whitelist and IP literals are checked; redirects are still followed by hand and
 * re-checked, and the size cap still cuts the body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaConfig } from '../../src/media/config.js';
import { createMediaFetcher } from '../../src/media/fetcher.js';
import { createFetchTransport } from '../../src/media/transport.js';
import { smallPng } from './helpers/fixtures.js';
import { redirect, serve, startMediaServer, type MediaServer } from './helpers/media-server.js';

let server: MediaServer;

beforeAll(async () => {
  server = await startMediaServer({
    '/a.png': serve(smallPng(), 'image/png'),
    '/to-a': redirect('/a.png'),
    '/to-private': redirect('http://10.0.0.1/a.png'),
    '/big': serve(new Uint8Array(5000).fill(0x89), 'image/png'),
  });
});

afterAll(async () => {
  await server.close();
});

function fetcher() {
  const config = resolveMediaConfig({ allowedDomains: ['127.0.0.1', '10.0.0.1'], allowPrivateAddresses: ['127.0.0.1/32'], maxBytes: { image: 4096 } });
  return createMediaFetcher(config, { transport: createFetchTransport(globalThis.fetch) });
}

describe('fetch-API transport', () => {
  it('fetches and follows a redirect by hand', async () => {
    const media = await fetcher().fetch(`${server.origin}/to-a`, 'image');
    expect(media.format).toBe('png');
    expect(media.finalUrl).toBe(`${server.origin}/a.png`);
  });

  it('re-checks a redirect target and refuses a private IP literal', async () => {
    await expect(fetcher().fetch(`${server.origin}/to-private`, 'image')).rejects.toMatchObject({ reason: 'redirect_refused' });
  });

  it('refuses a body over the cap', async () => {
    await expect(fetcher().fetch(`${server.origin}/big`, 'image')).rejects.toMatchObject({ reason: 'too_large' });
  });
});
