/**
 * The in-page engine's downloads as people read them: per file, bytes of total and percent
 * ("model.onnx 0.5 of 1.1 MB (47%)"), so a big model or the 14 MB onnxruntime .wasm
 * shows how far along it is.
 */

/** One file's progress, as src/runtime/browser/downloads.ts reports it. */
export interface DownloadProgress {
  file: string;
  loadedBytes: number;
  /** null when the server sent no length. */
  totalBytes: number | null;
  /** Read from the page's cache, not the network. */
  cached?: boolean;
}

/** Files smaller than this are listed only while they are still arriving. */
const SMALL_FILE_BYTES = 64 * 1024;

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export function formatDownload({ file, loadedBytes, totalBytes, cached }: DownloadProgress): string {
  if (totalBytes === null) return `${file} ${formatBytes(loadedBytes)}`;
  // Both figures in the total's unit, so "0.5 of 1.1 MB" never reads "512.0 kB of 1.1 MB".
  const unit = totalBytes < 1024 ? 1 : totalBytes < 1024 * 1024 ? 1024 : 1024 * 1024;
  const name = unit === 1 ? 'B' : unit === 1024 ? 'kB' : 'MB';
  const digits = unit === 1 ? 0 : 1;
  const percent = totalBytes === 0 ? 100 : Math.floor((loadedBytes / totalBytes) * 100);
  const amount = `${(loadedBytes / unit).toFixed(digits)} of ${(totalBytes / unit).toFixed(digits)} ${name} (${percent}%)`;
  return `${file} ${amount}${cached ? ' from cache' : ''}`;
}

/** Every file's latest progress; `summary()` is the status line while they download. */
export class DownloadList {
  private readonly files = new Map<string, DownloadProgress>();

  update(progress: DownloadProgress): void {
    this.files.set(progress.file, progress);
  }

  summary(): string {
    const shown = [...this.files.values()].filter(
      (p) => p.totalBytes === null || p.totalBytes >= SMALL_FILE_BYTES || p.loadedBytes < p.totalBytes,
    );
    return shown.map(formatDownload).join(' · ');
  }
}
