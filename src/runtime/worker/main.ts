/**
 * The Worker entry (`npm run dev`, `wrangler deploy`): the same HTTP app as `npm start`,
 * with the embedded model run by onnxruntime-web's WebAssembly backend in the Worker
 * itself, or, when UPSTREAM_URL or an UPSTREAM service binding is configured, with
 * generation delegated to that server while tokenizing and validation stay here.
 * Structured output runs on XGrammar from the uploaded dist/xgrammar.wasm (worker-guides.ts).
 * Configuration comes from the Worker's vars and secrets (see worker-env.ts).
 * A bundled GGUF instead of the embedded model: worker-gguf.ts (`--env gguf`).
 */
import { forwardingGuideCompiler } from '../../engine/remote/guides.js';
import { upstreamFromEnv } from './env.js';
import { createWorkerHandler } from './handler.js';
import { workerLocalEngine } from './local-engine.js';
import { embeddedModelFiles } from './model.js';
import { workerRemoteEngine } from './remote.js';
import { EMBEDDED_MODEL_DIR } from './tokenizer-files.js';

export default createWorkerHandler(async (env, config) => {
  const upstream = upstreamFromEnv(env);
  if (upstream !== null) return { engine: workerRemoteEngine(upstream, config), sharedStepLoop: false, guideCompiler: forwardingGuideCompiler };
  return workerLocalEngine(embeddedModelFiles(), config);
}, EMBEDDED_MODEL_DIR);
