/**
 * IP literals in every spelling the URL parser accepts, and the address ranges behind
 * them. The transport is a stub that records what it was asked to connect to: a refused
 * URL must never reach it.
 */
import { describe, expect, it } from 'vitest';
import { createAddressPolicy, specialRangeOf } from '../../src/media/address-policy.js';
import { resolveMediaConfig } from '../../src/media/config.js';
import { MediaError } from '../../src/media/errors.js';
import { createMediaFetcher } from '../../src/media/fetcher.js';
import { parseIp } from '../../src/media/ip-address.js';
import type { Transport, TransportRequest } from '../../src/media/transport.js';
import { smallPng } from './helpers/fixtures.js';

function recordingTransport() {
  const requests: TransportRequest[] = [];
  const transport: Transport = {
    pinsAddress: true,
    async request(req) {
      requests.push(req);
      const body = smallPng();
      return {
        status: 200,
        header: (name) => (name === 'content-length' ? String(body.length) : null),
        body: (async function* () {
          yield body;
        })(),
        cancel: () => {},
      };
    },
  };
  return { transport, requests };
}

/** A fetcher whose whitelist holds exactly the hosts of `urls`, with no private-address exemption. */
function fetcherFor(urls: string[], resolve?: (host: string) => Promise<string[]>) {
  const { transport, requests } = recordingTransport();
  const config = resolveMediaConfig({ allowedDomains: urls.map((u) => new URL(u).hostname) });
  return { fetcher: createMediaFetcher(config, { transport, resolve }), requests };
}

async function reasonFor(url: string): Promise<{ reason: string; message: string; connected: boolean }> {
  const { fetcher, requests } = fetcherFor([url]);
  try {
    await fetcher.fetch(url, 'image');
    return { reason: 'allowed', message: '', connected: requests.length > 0 };
  } catch (error) {
    if (!(error instanceof MediaError)) throw error;
    return { reason: error.reason, message: error.message, connected: requests.length > 0 };
  }
}

describe('IP literals', () => {
  const loopbackSpellings = [
    'http://127.0.0.1/a.png',
    'http://2130706433/a.png', // decimal
    'http://0177.0.0.1/a.png', // octal
    'http://0x7f.1/a.png', // hex, short
    'http://0x7f000001/a.png',
    'http://127.1/a.png', // short form
    'http://127.0.0.1./a.png', // trailing dot
    'http://[::1]/a.png',
    'http://[0:0:0:0:0:0:0:1]/a.png',
    'http://[::ffff:127.0.0.1]/a.png', // IPv4-mapped
    'http://[::ffff:7f00:1]/a.png',
    'http://[64:ff9b::127.0.0.1]/a.png', // NAT64 embedding
    'http://[2002:7f00:1::]/a.png', // 6to4 embedding
  ];
  it.each(loopbackSpellings)('refuses %s as loopback without connecting', async (url) => {
    const result = await reasonFor(url);
    expect(result.reason).toBe('private_address');
    expect(result.message).toContain('loopback');
    expect(result.connected).toBe(false);
  });

  const internal: [string, string][] = [
    ['http://10.1.2.3/', 'private'],
    ['http://012.1.2.3/', 'private'], // octal 10.1.2.3
    ['http://172.16.0.1/', 'private'],
    ['http://192.168.0.1/', 'private'],
    ['http://3232235521/', 'private'], // 192.168.0.1 in decimal
    ['http://169.254.169.254/', 'link-local'], // cloud metadata endpoint
    ['http://100.64.0.1/', 'carrier-grade NAT'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://0/', 'unspecified'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://255.255.255.255/', 'broadcast'],
    ['http://240.0.0.1/', 'reserved'],
    ['http://192.0.2.1/', 'documentation'],
    ['http://198.18.0.1/', 'benchmarking'],
    ['http://[::]/', 'unspecified'],
    ['http://[fe80::1]/', 'link-local'],
    ['http://[fc00::1]/', 'unique local'],
    ['http://[fd12:3456::1]/', 'unique local'],
    ['http://[ff02::1]/', 'multicast'],
    ['http://[::ffff:10.0.0.1]/', 'private'],
    ['http://[::ffff:169.254.169.254]/', 'link-local'],
    ['http://[::10.0.0.1]/', 'IPv4-compatible'],
    ['http://[2001:db8::1]/', 'documentation'],
    ['http://[fec0::1]/', 'site-local'],
    ['http://[2001:0::1]/', 'Teredo'],
  ];
  it.each(internal)('refuses %s (%s) without connecting', async (url, range) => {
    const result = await reasonFor(url);
    expect(result.reason).toBe('private_address');
    expect(result.message).toContain(range);
    expect(result.connected).toBe(false);
  });

  it.each(['http://8.8.8.8/a.png', 'http://[2606:4700::1111]/a.png', 'http://[::ffff:8.8.8.8]/a.png', 'http://134744072/a.png'])(
    'allows the public address %s and connects to it',
    async (url) => {
      const { fetcher, requests } = fetcherFor([url]);
      const media = await fetcher.fetch(url, 'image');
      expect(media.format).toBe('png');
      expect(requests).toHaveLength(1);
    },
  );

  it('needs the literal on the whitelist even when public', async () => {
    const { transport, requests } = recordingTransport();
    const fetcher = createMediaFetcher(resolveMediaConfig({ allowedDomains: ['media.example'] }), { transport });
    await expect(fetcher.fetch('http://8.8.8.8/a.png', 'image')).rejects.toMatchObject({ reason: 'host_not_allowed' });
    expect(requests).toHaveLength(0);
  });

  it('matches whitelist entries and URLs after the same normalisation', async () => {
    // "0x7f.1" in the list and "2130706433" in the URL are both 127.0.0.1: whitelisted, then refused as loopback.
    const { transport } = recordingTransport();
    const fetcher = createMediaFetcher(resolveMediaConfig({ allowedDomains: ['0x7f.1'] }), { transport });
    await expect(fetcher.fetch('http://2130706433/a.png', 'image')).rejects.toMatchObject({ reason: 'private_address' });
  });

  it('passes the checked address to the transport for a resolved name', async () => {
    const { fetcher, requests } = fetcherFor(['http://cdn.example/a.png'], async () => ['93.184.216.34', '2606:2800:220:1::1']);
    await fetcher.fetch('http://cdn.example/a.png', 'image');
    expect(requests[0].address).toBe('93.184.216.34');
    expect(requests[0].url.hostname).toBe('cdn.example');
  });
});

describe('address policy', () => {
  const range = (text: string) => specialRangeOf(parseIp(text)!);

  it('classifies public addresses as allowed', () => {
    for (const ip of ['1.1.1.1', '8.8.4.4', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450::1', '::ffff:1.1.1.1', '64:ff9b::808:808']) {
      expect(range(ip), ip).toBeNull();
    }
  });

  it('judges embedded IPv4 addresses by the embedded address', () => {
    expect(range('::ffff:192.168.1.1')).toContain('private');
    expect(range('64:ff9b::a00:1')).toContain('NAT64 private');
    expect(range('2002:c0a8:0101::1')).toContain('6to4 private');
  });

  it('refuses IPv6 outside global unicast by default', () => {
    expect(range('4000::1')).toContain('reserved');
    expect(range('100::1')).toBe('discard-only');
  });

  it('exempts only the listed ranges', () => {
    const policy = createAddressPolicy(['127.0.0.1/32', 'fd00::/8']);
    expect(policy.refusal(parseIp('127.0.0.1')!)).toBeNull();
    expect(policy.refusal(parseIp('::ffff:127.0.0.1')!)).toBeNull();
    expect(policy.refusal(parseIp('fd00::1')!)).toBeNull();
    expect(policy.refusal(parseIp('127.0.0.2')!)).toBe('loopback');
    expect(policy.refusal(parseIp('10.0.0.1')!)).toBe('private');
    expect(createAddressPolicy(true).refusal(parseIp('10.0.0.1')!)).toBeNull();
    expect(() => createAddressPolicy(['10.0.0.0/33'])).toThrow('not an IP address or CIDR');
  });

  it('parses only canonical address text', () => {
    expect(parseIp('0177.0.0.1')).toBeNull();
    expect(parseIp('127.1')).toBeNull();
    expect(parseIp('fe80::1%eth0')).toBeNull();
    expect(parseIp('1::2::3')).toBeNull();
    expect(Array.from(parseIp('::ffff:1.2.3.4')!.bytes.slice(10))).toEqual([0xff, 0xff, 1, 2, 3, 4]);
    expect(Array.from(parseIp('[1:2:3:4:5:6:7:8]')!.bytes)).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
  });
});
