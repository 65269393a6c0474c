/**
 * Configuration from the environment, whitelist matching rules, format sniffing and the
 * disk-space rule of the spec.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MEDIA_CONFIG, mediaConfigFromEnv, resolveMediaConfig } from '../../src/media/config.js';
import { checkMediaDiskSpace, requiredMediaDiskSpace } from '../../src/media/disk-space.js';
import { createHostWhitelist, refusedHostReason } from '../../src/media/host-policy.js';
import { requireFormat, sniffFormat } from '../../src/media/magic.js';

const MiB = 1024 * 1024;

describe('media config', () => {
  it('has the spec defaults', () => {
    expect(DEFAULT_MEDIA_CONFIG.maxBytes).toEqual({ image: 40 * MiB, audio: 40 * MiB, video: 512 * MiB });
    expect(DEFAULT_MEDIA_CONFIG.mediaDir).toBe('/data/multimodal_inputs/');
    expect(DEFAULT_MEDIA_CONFIG.allowedDomains).toEqual([]);
    expect(DEFAULT_MEDIA_CONFIG.allowPrivateAddresses).toBe(false);
  });

  it('reads ALLOWED_MEDIA_DOMAINS_ENV and the MEDIA_* variables', () => {
    const config = mediaConfigFromEnv({
      ALLOWED_MEDIA_DOMAINS_ENV: 'upload.media.org, cdn.example.com ,203.0.113.9',
      MEDIA_DIR: '/srv/media',
      MEDIA_ALLOW_PRIVATE_ADDRESSES: '10.1.0.0/16,fd00::/8',
      MEDIA_MAX_VIDEO_MB: '100',
      MEDIA_TIMEOUT_MS: '5000',
      MEDIA_MAX_REDIRECTS: '0',
      MEDIA_REFUSED_DOMAIN_SUFFIXES: 'wildcard.example',
    });
    expect(config.allowedDomains).toEqual(['upload.media.org', 'cdn.example.com', '203.0.113.9']);
    expect(config.mediaDir).toBe('/srv/media');
    expect(config.allowPrivateAddresses).toEqual(['10.1.0.0/16', 'fd00::/8']);
    expect(config.maxBytes).toEqual({ image: 40 * MiB, audio: 40 * MiB, video: 100 * MiB });
    expect(config.totalTimeoutMs).toBe(5000);
    expect(config.maxRedirects).toBe(0);
    expect(config.extraRefusedDomainSuffixes).toEqual(['wildcard.example']);
    expect(mediaConfigFromEnv({ MEDIA_ALLOW_PRIVATE_ADDRESSES: 'true' }).allowPrivateAddresses).toBe(true);
    expect(mediaConfigFromEnv({})).toEqual(DEFAULT_MEDIA_CONFIG);
  });

  it('stops at start-up on bad values', () => {
    expect(() => mediaConfigFromEnv({ ALLOWED_MEDIA_DOMAINS_ENV: 'https://media.example.com/' })).toThrow('ALLOWED_MEDIA_DOMAINS_ENV');
    expect(() => mediaConfigFromEnv({ ALLOWED_MEDIA_DOMAINS_ENV: 'media.example.com:8080' })).toThrow('ports');
    expect(() => mediaConfigFromEnv({ MEDIA_ALLOW_PRIVATE_ADDRESSES: '10.0.0.0/40' })).toThrow('CIDR');
    expect(() => mediaConfigFromEnv({ MEDIA_TIMEOUT_MS: 'soon' })).toThrow('MEDIA_TIMEOUT_MS');
    expect(() => resolveMediaConfig({ maxBytes: { image: 0 } })).toThrow('maxBytes.image');
  });
});

describe('whitelist', () => {
  it('matches exact hosts after normalisation, and subdomains only for "." entries', () => {
    const list = createHostWhitelist(['Media.Example.com.', '.cdn.example.net', '*.img.example.org', '::1', '2130706433']);
    expect(list.allows('media.example.com')).toBe(true);
    expect(list.allows('sub.media.example.com')).toBe(false);
    expect(list.allows('a.cdn.example.net')).toBe(true);
    expect(list.allows('a.b.cdn.example.net')).toBe(true);
    expect(list.allows('cdn.example.net')).toBe(false);
    expect(list.allows('evilcdn.example.net')).toBe(false);
    expect(list.allows('x.img.example.org')).toBe(true);
    expect(list.allows('[::1]')).toBe(true);
    expect(list.allows('127.0.0.1')).toBe(true);
    expect(list.entries).toEqual(['media.example.com', '.cdn.example.net', '.img.example.org', '[::1]', '127.0.0.1']);
  });

  it('refuses wildcard-DNS services and localhost names whatever the whitelist says', () => {
    expect(refusedHostReason('1.2.3.4.nip.io')).toContain('nip.io');
    expect(refusedHostReason('nip.io')).toContain('nip.io');
    expect(refusedHostReason('10-0-0-1.sslip.io')).toContain('sslip.io');
    expect(refusedHostReason('app.localtest.me')).toContain('localtest.me');
    expect(refusedHostReason('localhost')).toContain('special-use');
    expect(refusedHostReason('api.localhost')).toContain('special-use');
    expect(refusedHostReason('notnip.io')).toBeNull();
    expect(refusedHostReason('x.corp.example', ['corp.example'])).toContain('corp.example');
  });
});

describe('format sniffing', () => {
  const bytes = (...values: (number | string)[]) =>
    new Uint8Array(values.flatMap((v) => (typeof v === 'string' ? [...v].map((c) => c.charCodeAt(0)) : [v])));

  it('recognises each accepted format by its magic bytes', () => {
    expect(sniffFormat(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe('jpeg');
    expect(sniffFormat(bytes(0x89, 'PNG', 0x0d, 0x0a, 0x1a, 0x0a))).toBe('png');
    expect(sniffFormat(bytes('RIFF', 0, 0, 0, 0, 'WAVE'))).toBe('wav');
    expect(sniffFormat(bytes('RIFF', 0, 0, 0, 0, 'AVI '))).toBe('avi');
    expect(sniffFormat(bytes('ID3', 4, 0))).toBe('mp3');
    expect(sniffFormat(bytes(0xff, 0xfb, 0x90, 0x64))).toBe('mp3');
    expect(sniffFormat(bytes('fLaC'))).toBe('flac');
    expect(sniffFormat(bytes(0, 0, 0, 0x18, 'ftypmp42'))).toBe('mp4');
  });

  it('refuses look-alikes and formats of another kind', () => {
    expect(sniffFormat(bytes(0xff, 0xff, 0xff, 0xff))).toBeNull(); // not a valid MPEG frame header
    expect(sniffFormat(bytes('RIFF', 0, 0, 0, 0, 'WEBP'))).toBeNull();
    expect(() => requireFormat(bytes('fLaC'), 'image')).toThrow(/FLAC file, not one of the accepted image formats \(JPEG, PNG\)/);
    expect(() => requireFormat(bytes('GIF89a'), 'image')).toThrow(/a GIF image/);
    expect(() => requireFormat(new Uint8Array(0), 'audio')).toThrow(/is empty/);
  });
});

describe('disk space rule', () => {
  it('is largest file × concurrent requests × 1.5 (the spec: 512 MB × 1000 → 750 GB)', () => {
    expect(requiredMediaDiskSpace(1000)).toBe(750 * 1024 * MiB);
  });

  it('warns when free space is below the reserve, and not when above', async () => {
    const warning = await checkMediaDiskSpace('/tmp/does-not-exist/multimodal_inputs', 1_000_000_000);
    expect(warning).toMatch(/reserve for media downloads/);
    expect(warning).toContain('× 1000000000 concurrent requests × 1.5');
    expect(await checkMediaDiskSpace('/tmp', 1, { image: 1, audio: 1, video: 1 })).toBeNull();
  });
});
