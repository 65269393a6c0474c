/**
 * Local media files under Node, confined to the media directory. A path is refused when
 * it leaves the directory lexically (`..`, another absolute path) or once resolved
 * (realpath: symlinks pointing outside). The file is opened without following a final
 * symlink and without blocking (a FIFO swapped in cannot hang the request), must be a
 * regular file, and its size is checked with fstat before a byte is read.
 *
 * A file with more than one hard link is refused: a hard link has no "real" path to
 * check, so a link inside the directory to a file elsewhere (made by anyone who can
 * write both places) would read like any other file. The count comes from the same
 * fstat, on the open descriptor, so no swap between check and read can dodge it.
 *
 * The directory itself must not be writable by untrusted parties: a path component
 * swapped for a symlink between realpath and open is outside what this check can see.
 */
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import path from 'node:path';
import { tooLarge } from './body-reader.js';
import { mediaError } from './errors.js';
import type { LocalFileReader } from './fetcher.js';
import { preview } from './media-ref.js';

function isInside(dir: string, candidate: string): boolean {
  const relative = path.relative(dir, candidate);
  return relative !== '' && relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

function outside(mediaDir: string) {
  return mediaError('path_outside_media_dir', `local media files must be inside the media directory ${mediaDir}`);
}

async function realDirectory(mediaDir: string): Promise<string> {
  try {
    return await realpath(mediaDir);
  } catch {
    throw mediaError('file_not_found', `the media directory ${mediaDir} does not exist`);
  }
}

export function createNodeLocalFiles(mediaDir: string): LocalFileReader {
  const lexicalDir = path.resolve(mediaDir);
  return {
    async read(requested, maxBytes, what, signal) {
      const candidate = path.resolve(lexicalDir, requested);
      const realDir = await realDirectory(lexicalDir);
      // A path written through the directory's own real location (e.g. /mnt/data/...) is fine too.
      if (!isInside(lexicalDir, candidate) && !isInside(realDir, candidate)) throw outside(mediaDir);
      let real: string;
      try {
        real = await realpath(candidate);
      } catch {
        throw mediaError('file_not_found', `the local file "${preview(requested)}" does not exist in the media directory`);
      }
      if (!isInside(realDir, real)) throw outside(mediaDir);

      signal.throwIfAborted();
      let handle;
      try {
        handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      } catch {
        throw mediaError('file_not_found', `the local file "${preview(requested)}" cannot be opened`);
      }
      try {
        const stat = await handle.stat();
        if (!stat.isFile()) throw mediaError('file_not_found', `"${preview(requested)}" is not a regular file`);
        if (stat.nlink > 1) {
          throw mediaError(
            'path_outside_media_dir',
            `the local file "${preview(requested)}" has ${stat.nlink} hard links; files in the media directory must have exactly one (a hard link may lead outside it)`,
          );
        }
        if (stat.size > maxBytes) throw tooLarge(what, maxBytes, stat.size);
        // Read at most one byte past the cap, in case the file grows after fstat.
        const buffer = new Uint8Array(Math.min(stat.size, maxBytes) + 1);
        let filled = 0;
        while (filled < buffer.length) {
          signal.throwIfAborted();
          const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        if (filled > maxBytes) throw tooLarge(what, maxBytes);
        return buffer.subarray(0, filled);
      } finally {
        await handle.close();
      }
    },
  };
}
