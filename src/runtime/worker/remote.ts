import type { ServerConfig } from '../../config/server-config.js';
import type { ModelFiles } from '../../onnx/model-files.js';
import { RemoteEngine } from '../../engine/remote/remote-engine.js';
import type { UpstreamSettings } from './env.js';
import { embeddedTokenizerFiles } from './tokenizer-files.js';

/** The delegating engine, as the Worker entries build it: the embedded tokenizer unless the entry has its model's. */
export function workerRemoteEngine(upstream: UpstreamSettings, config: ServerConfig, files: Omit<ModelFiles, 'onnx'> = embeddedTokenizerFiles()): RemoteEngine {
  return new RemoteEngine({ files, servedModelName: config.servedModelName, upstream });
}
