/**
 * The media fetcher wired for Node: system DNS with every answer checked, connections
 * pinned to the checked address, local files confined to the media directory, video
 * decoded by the npm-shipped ffmpeg (Motion JPEG only where that package is missing),
 * JPEG decoded by libjpeg-turbo through sharp (as PIL decodes it).
 */
import type { MediaConfig } from './config.js';
import { createMediaFetcher, type MediaFetcher, type MediaFetcherDeps } from './fetcher.js';
import { createNodeLocalFiles } from './node-local-files.js';
import { createNodeTransport, nodeResolve } from './node-transport.js';
import { bundledFfmpegPath, createFfmpegVideoDecoder } from './node-ffmpeg.js';
import { createWorkerMediaDecoder } from './node-decode-worker.js';
import { createNodeJpegDecoder } from './node-jpeg.js';
import type { PoolLimits } from '../threads/worker-pool.js';

/** `threadQueue`: the decoding thread's queue bounds (the server's maxThreadQueue, maxThreadQueuePerClient). */
export function createNodeMediaFetcher(config: MediaConfig, deps: MediaFetcherDeps = {}, threadQueue: Omit<Partial<PoolLimits>, 'size'> = {}): MediaFetcher {
  const ffmpegPath = bundledFfmpegPath();
  return createMediaFetcher(config, {
    resolve: nodeResolve,
    transport: createNodeTransport(),
    localFiles: createNodeLocalFiles(config.mediaDir),
    videoDecoder: ffmpegPath === null ? undefined : createFfmpegVideoDecoder({ ffmpegPath, timeoutMs: config.videoDecodeTimeoutMs }),
    decoder: createWorkerMediaDecoder({ timeoutMs: config.decodeTimeoutMs, pool: threadQueue }),
    jpegDecoder: createNodeJpegDecoder(),
    ...deps,
  });
}

export { checkMediaDiskSpace, requiredMediaDiskSpace } from './disk-space.js';
export { createNodeTransport, nodeResolve } from './node-transport.js';
export { createNodeLocalFiles } from './node-local-files.js';
export { bundledFfmpegPath, createFfmpegVideoDecoder } from './node-ffmpeg.js';
export { createWorkerMediaDecoder } from './node-decode-worker.js';
export { createNodeJpegDecoder } from './node-jpeg.js';
