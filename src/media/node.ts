/**
 * The media fetcher wired for Node: system DNS with every answer checked, connections
 * pinned to the checked address, local files confined to the media directory.
 */
import type { MediaConfig } from './config.js';
import { createMediaFetcher, type MediaFetcher, type MediaFetcherDeps } from './fetcher.js';
import { createNodeLocalFiles } from './node-local-files.js';
import { createNodeTransport, nodeResolve } from './node-transport.js';

export function createNodeMediaFetcher(config: MediaConfig, deps: MediaFetcherDeps = {}): MediaFetcher {
  return createMediaFetcher(config, {
    resolve: nodeResolve,
    transport: createNodeTransport(),
    localFiles: createNodeLocalFiles(config.mediaDir),
    ...deps,
  });
}

export { checkMediaDiskSpace, requiredMediaDiskSpace } from './disk-space.js';
export { createNodeTransport, nodeResolve } from './node-transport.js';
export { createNodeLocalFiles } from './node-local-files.js';
