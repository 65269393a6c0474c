import type { ServerConfig } from '../config/server-config.js';
import { RemoteEngine } from '../engine/remote-engine.js';
import type { UpstreamSettings } from './worker-env.js';
import { embeddedTokenizerFiles } from './worker-tokenizer-files.js';

/** The delegating engine with the embedded tokenizer, as both Worker entries build it. */
export function workerRemoteEngine(upstream: UpstreamSettings, config: ServerConfig): RemoteEngine {
  return new RemoteEngine({ files: embeddedTokenizerFiles(), servedModelName: config.servedModelName, upstream });
}
