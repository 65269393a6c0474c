/**
 * Local files confined to the media directory, and base64 data: URLs.
 */
import { link, mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaConfig } from '../../src/media/config.js';
import { MediaError } from '../../src/media/errors.js';
import { createMediaFetcher } from '../../src/media/fetcher.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { HTML_PAGE, smallPng, twoToneJpeg } from './helpers/fixtures.js';

let root: string;
let mediaDir: string;
const png = smallPng();

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'media-test-'));
  mediaDir = path.join(root, 'multimodal_inputs');
  await mkdir(path.join(mediaDir, 'sub'), { recursive: true });
  await writeFile(path.join(mediaDir, 'cat.png'), png);
  await writeFile(path.join(mediaDir, 'sub', 'dog.png'), png);
  await writeFile(path.join(mediaDir, 'page.png'), HTML_PAGE);
  await writeFile(path.join(mediaDir, 'big.png'), new Uint8Array(2048).fill(0x89));
  await writeFile(path.join(root, 'secret.png'), png);
  await symlink(path.join(root, 'secret.png'), path.join(mediaDir, 'escape.png'));
  await symlink(root, path.join(mediaDir, 'up'));
  await symlink(path.join(mediaDir, 'cat.png'), path.join(mediaDir, 'alias.png'));
  await writeFile(path.join(root, 'outside.png'), png);
  await link(path.join(root, 'outside.png'), path.join(mediaDir, 'hardlink.png'));
  await writeFile(path.join(mediaDir, 'twin-a.png'), png);
  await link(path.join(mediaDir, 'twin-a.png'), path.join(mediaDir, 'twin-b.png'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function fetcher() {
  return createNodeMediaFetcher(resolveMediaConfig({ mediaDir, maxBytes: { image: 1024 } }));
}

async function reasonOf(ref: string): Promise<string> {
  try {
    await fetcher().fetch(ref, 'image');
    return 'allowed';
  } catch (error) {
    if (error instanceof MediaError) return error.reason;
    throw error;
  }
}

describe('local media files', () => {
  it('reads files inside the media directory by absolute path, relative path and file: URL', async () => {
    expect((await fetcher().fetch(path.join(mediaDir, 'cat.png'), 'image')).bytes).toEqual(png);
    expect((await fetcher().fetch('sub/dog.png', 'image')).format).toBe('png');
    expect((await fetcher().fetch(`file://${path.join(mediaDir, 'sub', 'dog.png')}`, 'image')).format).toBe('png');
    expect((await fetcher().fetch('alias.png', 'image')).format).toBe('png');
  });

  it('refuses ../ escapes, absolute paths elsewhere and file: URLs outside', async () => {
    expect(await reasonOf('../secret.png')).toBe('path_outside_media_dir');
    expect(await reasonOf(`${mediaDir}/sub/../../secret.png`)).toBe('path_outside_media_dir');
    expect(await reasonOf(path.join(root, 'secret.png'))).toBe('path_outside_media_dir');
    expect(await reasonOf('/etc/passwd')).toBe('path_outside_media_dir');
    expect(await reasonOf('file:///etc/passwd')).toBe('path_outside_media_dir');
    expect(await reasonOf(`file://${mediaDir}/%2e%2e/secret.png`)).toBe('path_outside_media_dir');
  });

  it('refuses symlinks that lead out of the media directory', async () => {
    expect(await reasonOf('escape.png')).toBe('path_outside_media_dir');
    expect(await reasonOf('up/secret.png')).toBe('path_outside_media_dir');
  });

  it('refuses files with more than one hard link, even when both links are inside', async () => {
    expect(await reasonOf('hardlink.png')).toBe('path_outside_media_dir');
    await expect(fetcher().fetch('hardlink.png', 'image')).rejects.toThrow(/2 hard links/);
    expect(await reasonOf('twin-a.png')).toBe('path_outside_media_dir');
    // The same bytes through a file with one link are served: the refusal is the link count.
    expect((await fetcher().fetch('cat.png', 'image')).bytes).toEqual(png);
  });

  it('refuses missing files, directories, oversize files and non-media content', async () => {
    expect(await reasonOf('nope.png')).toBe('file_not_found');
    expect(await reasonOf('sub')).toBe('file_not_found');
    expect(await reasonOf('big.png')).toBe('too_large');
    expect(await reasonOf('page.png')).toBe('format_not_allowed');
  });

  it('refuses local paths where no local file reader is configured (workerd)', async () => {
    const neutral = createMediaFetcher(resolveMediaConfig({ mediaDir }));
    await expect(neutral.fetch('cat.png', 'image')).rejects.toMatchObject({ reason: 'local_files_unavailable' });
  });
});

describe('data: URLs', () => {
  const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

  it('decodes a base64 JPEG and a base64 PNG', async () => {
    const jpeg = twoToneJpeg(8, 8, [255, 0, 0], [0, 0, 255]);
    const jpegMedia = await fetcher().fetch(`data:image/jpeg;base64,${base64(jpeg)}`, 'image');
    expect(jpegMedia.format).toBe('jpeg');
    expect(jpegMedia.bytes).toEqual(jpeg);
    expect((await fetcher().fetch(`data:image/png;base64,${base64(png)}`, 'image')).bytes).toEqual(png);
  });

  it('refuses malformed base64', async () => {
    expect(await reasonOf('data:image/jpeg;base64,/9j/4AAQ@@@@')).toBe('malformed_data_url');
    expect(await reasonOf('data:image/jpeg;base64,/9j/4')).toBe('malformed_data_url'); // length 4k+1
    expect(await reasonOf('data:image/jpeg;base64,')).toBe('malformed_data_url');
  });

  it('refuses non-base64 data URLs and MIME types of another kind', async () => {
    expect(await reasonOf('data:image/png,%89PNG')).toBe('malformed_data_url');
    expect(await reasonOf(`data:text/html;base64,${base64(png)}`)).toBe('malformed_data_url');
  });

  it('sniffs the payload: HTML declared as image/png is refused', async () => {
    expect(await reasonOf(`data:image/png;base64,${Buffer.from(HTML_PAGE).toString('base64')}`)).toBe('format_not_allowed');
  });

  it('applies the size cap to the decoded payload', async () => {
    const big = new Uint8Array(1025).fill(0xff);
    expect(await reasonOf(`data:image/jpeg;base64,${base64(big)}`)).toBe('too_large');
  });
});

describe('schemes', () => {
  it('refuses schemes other than http, https, data and file', async () => {
    for (const ref of ['ftp://media.example/a.png', 'gopher://x/', 'javascript:alert(1)', 'blob:https://x/1']) {
      expect(await reasonOf(ref), ref).toBe('scheme_not_allowed');
    }
  });

  it('refuses file: URLs naming a remote host', async () => {
    expect(await reasonOf('file://server.example/share/a.png')).toBe('scheme_not_allowed');
  });

  it('refuses malformed http URLs and credentials', async () => {
    expect(await reasonOf('http://exa mple.com/a.png')).toBe('malformed_part');
    expect(await reasonOf('http://[::1/a.png')).toBe('malformed_part');
    const withCredentials = createNodeMediaFetcher(resolveMediaConfig({ allowedDomains: ['media.example'] }));
    await expect(withCredentials.fetch('http://user:pw@media.example/a.png', 'image')).rejects.toMatchObject({ reason: 'malformed_part' });
  });
});
