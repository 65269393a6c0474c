/**
 * A MODEL argument that is not a path here but a Hugging Face id: fetched into the Hugging
 * Face cache (download.ts) and served from there, with progress a user can follow.
 */
import { lstat } from 'node:fs/promises';
import type { DownloadProgress } from './download.js';
import { parseHubModelRef, type HubModelRef } from './model-ref.js';

export { formatHubModelRef, parseHubModelRef, type HubModelRef } from './model-ref.js';
export { HubError, hubSettingsFromEnv, resolveHubModel, type DownloadProgress, type HubSettings, type ResolvedModel } from './download.js';

/** The Hub reference `model` names when nothing exists at that path here; null for a local path (or a missing one not shaped like an id). */
export async function hubRefIfNotLocal(model: string): Promise<HubModelRef | null> {
  const local = await lstat(model).then(
    () => true,
    () => false,
  );
  return local ? null : parseHubModelRef(model);
}

const size = (bytes: number) => (bytes >= 2 ** 20 ? `${(bytes / 2 ** 20).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`);
/** Files smaller than this get one line, when done. */
const PROGRESS_MIN_BYTES = 8 * 2 ** 20;

/**
 * Prints download progress: on a terminal one line per file redrawn in place (a bar), otherwise
 * a line when a file starts, at each quarter, and when it is done (logs stay readable).
 */
export function downloadProgressPrinter(out: NodeJS.WriteStream = process.stdout): DownloadProgress {
  const quarters = new Map<string, number>();
  return ({ file, received, total, done, cached }) => {
    if (done) {
      if (out.isTTY) out.write('\r\x1b[K');
      out.write(cached ? `Hub: ${file} (in the cache)\n` : `Hub: ${file} downloaded (${size(total)})\n`);
      return;
    }
    if (!(total >= PROGRESS_MIN_BYTES)) return;
    const percent = Math.floor((received / total) * 100);
    if (out.isTTY) {
      const width = 30;
      const filled = Math.round((percent / 100) * width);
      out.write(`\r\x1b[KHub: ${file} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${percent}% of ${size(total)}`);
      return;
    }
    const quarter = Math.floor(percent / 25);
    if (quarters.get(file) === quarter) return;
    quarters.set(file, quarter);
    out.write(`Hub: ${file} ${percent}% of ${size(total)}\n`);
  };
}
