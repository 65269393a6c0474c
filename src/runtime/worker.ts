/**
 * The Worker entry (`npm run dev`, `wrangler deploy`): the same HTTP app as `npm start`,
 * with the embedded model run by onnxruntime-web's WebAssembly backend in the Worker
 * itself, or, when UPSTREAM_URL or an UPSTREAM service binding is configured, with
 * generation delegated to that server while tokenizing and validation stay here.
 * Structured output runs on XGrammar from the uploaded dist/xgrammar.wasm (worker-guides.ts).
 * Configuration comes from the Worker's vars and secrets (see worker-env.ts).
 */
import { schedulerLimitsOf } from '../config/server-config.js';
import { fetchAdapterReader } from '../adapters/fetch-reader.js';
import { loraOptionsOf } from './lora-options.js';
import { LocalEngine } from '../engine/local-engine.js';
import { forwardingGuideCompiler } from '../engine/remote-guides.js';
import { upstreamFromEnv } from './worker-env.js';
import { workerGuideCompiler } from './worker-guides.js';
import { createWorkerHandler } from './worker-handler.js';
import { embeddedModelFiles } from './worker-model.js';
import { workerOrt } from './worker-ort.js';
import { workerRemoteEngine } from './worker-remote.js';
import { EMBEDDED_MODEL_DIR } from './worker-tokenizer-files.js';

export default createWorkerHandler(async (env, config) => {
  const upstream = upstreamFromEnv(env);
  if (upstream !== null) return { engine: workerRemoteEngine(upstream, config), sharedStepLoop: false, guideCompiler: forwardingGuideCompiler };
  const engine = await LocalEngine.create({
    ort: workerOrt(),
    files: embeddedModelFiles(),
    servedModelName: config.servedModelName,
    sessionOptions: { graphOptimizationLevel: 'all' },
    limits: schedulerLimitsOf(config),
    // LORA_MODULES paths are URLs here (a Worker has no disk), fetched once per isolate.
    lora: loraOptionsOf(config, fetchAdapterReader()),
  });
  return { engine, sharedStepLoop: true, guideCompiler: workerGuideCompiler(engine) };
}, EMBEDDED_MODEL_DIR);
