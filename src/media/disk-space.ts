/**
 * The spec's disk reservation rule for downloaded media: largest single file × maximum
 * concurrent requests × 1.5, against the free space of the media directory's file system.
 */
import { statfs } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_MEDIA_CONFIG, type MediaConfig } from './config.js';

export const DISK_RESERVE_FACTOR = 1.5;

const GiB = 1024 ** 3;

function gib(bytes: number): string {
  return `${(bytes / GiB).toFixed(1)} GB`;
}

/** Bytes the rule asks to keep free. */
export function requiredMediaDiskSpace(maxConcurrent: number, maxBytes: MediaConfig['maxBytes'] = DEFAULT_MEDIA_CONFIG.maxBytes): number {
  return Math.max(maxBytes.image, maxBytes.audio, maxBytes.video) * maxConcurrent * DISK_RESERVE_FACTOR;
}

async function freeBytes(dir: string): Promise<{ dir: string; free: number }> {
  // The media directory may not exist yet: measure the file system it would live on.
  let current = path.resolve(dir);
  for (;;) {
    try {
      const stats = await statfs(current);
      return { dir: current, free: stats.bavail * stats.bsize };
    } catch (error) {
      const parent = path.dirname(current);
      if (parent === current) throw error;
      current = parent;
    }
  }
}

/** A warning for the start-up log when free space is below the rule, else null. */
export async function checkMediaDiskSpace(
  dir: string,
  maxConcurrent: number,
  maxBytes: MediaConfig['maxBytes'] = DEFAULT_MEDIA_CONFIG.maxBytes,
): Promise<string | null> {
  const required = requiredMediaDiskSpace(maxConcurrent, maxBytes);
  const { dir: measured, free } = await freeBytes(dir);
  if (free >= required) return null;
  const largest = Math.max(maxBytes.image, maxBytes.audio, maxBytes.video);
  return (
    `media: ${gib(free)} free on the file system of ${measured}, but the reserve for media downloads is ` +
    `${gib(required)} (largest file ${gib(largest)} × ${maxConcurrent} concurrent requests × ${DISK_RESERVE_FACTOR})`
  );
}
