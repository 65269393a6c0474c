/**
 * The gateway-only Worker entry (`wrangler deploy --env gateway`): validates,
 * authenticates and streams at the edge, generation always runs on the upstream. It
 * bundles the tokenizer but neither onnxruntime nor the model, so it stays far below
 * the size limits (see docs/workerd.md).
 */
import { upstreamFromEnv } from './worker-env.js';
import { createWorkerHandler } from './worker-handler.js';
import { workerRemoteEngine } from './worker-remote.js';
import { EMBEDDED_MODEL_DIR } from './worker-tokenizer-files.js';

export default createWorkerHandler(async (env, config) => {
  const upstream = upstreamFromEnv(env);
  if (upstream === null) {
    throw new Error('The gateway has no upstream: set UPSTREAM_URL or bind a service as UPSTREAM.');
  }
  return { engine: workerRemoteEngine(upstream, config), sharedStepLoop: false };
}, EMBEDDED_MODEL_DIR);
