/**
 * Reads a response body into memory under a byte cap: Content-Length is checked before
 * the first byte is read, then a running count cancels the body as soon as it passes
 * the cap, so an oversized or endless body never sits in memory whole.
 */
import { mediaError } from './errors.js';
import type { TransportResponse } from './transport.js';

function formatBytes(n: number): string {
  const MiB = 1024 * 1024;
  return n >= MiB && n % MiB === 0 ? `${n / MiB} MB` : `${n} bytes`;
}

export function tooLarge(what: string, cap: number, size?: number): Error {
  const got = size === undefined ? 'more than that' : formatBytes(size);
  return mediaError('too_large', `the ${what} is larger than the ${formatBytes(cap)} limit (got ${got})`);
}

/**
 * Joins chunks into one plain Uint8Array of exactly `total` bytes, always a copy: Node's
 * chunks are Buffers that may be views into a shared pool.
 */
export function concatChunks(chunks: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

export async function readCappedBody(response: TransportResponse, cap: number, what: string): Promise<Uint8Array> {
  const declared = response.header('content-length');
  if (declared !== null && /^\s*[0-9]+\s*$/.test(declared)) {
    const length = Number(declared);
    if (length > cap) {
      response.cancel();
      throw tooLarge(what, cap, length);
    }
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of response.body) {
      total += chunk.byteLength;
      if (total > cap) throw tooLarge(what, cap);
      chunks.push(chunk);
    }
  } finally {
    // Also on success: releases the connection at once rather than when GC notices.
    response.cancel();
  }
  return concatChunks(chunks, total);
}
