/**
 * The GGUF Worker's engine (`--env gguf`): the .gguf the build bundled as a Data module
 * (its bytes in the isolate, read through views, never copied) becomes the graph on the
 * isolate's first request, built by the same code as the page's build worker
 * (gguf/gguf-model-files.ts: the in-place KV graph, weights kept quantized, one external
 * data buffer for onnxruntime-web), after the header is checked against the isolate's
 * memory (worker-gguf-limits.ts). What memory is left after the weights bounds the KV cache.
 */
import { schedulerLimitsOf } from '../../config/server-config.js';
import { formatBytes } from '../../engine/context-length.js';
import { forwardingGuideCompiler } from '../../engine/remote/guides.js';
import { bytesByteSource, ggufModelFiles } from '../../gguf/gguf-model-files.js';
import { ggufGraphOptionsFromSettings, openGgufModel } from '../../gguf/gguf-model.js';
import { refuseAnotherBundle } from './bundled-model.js';
import { upstreamFromEnv } from './env.js';
import { planWorkerGguf, workerGgufLimitsFrom, type WorkerGgufPlan } from './gguf-limits.js';
import type { EngineFactory } from './handler.js';
import { workerLocalEngine } from './local-engine.js';
import { workerRemoteEngine } from './remote.js';

export interface BundledGguf {
  /** The file's name: the default served model name, as Node serves MODEL_DIR=…/name.gguf. */
  name: string;
  bytes: ArrayBuffer;
}

export function workerGgufEngine(gguf: BundledGguf): EngineFactory {
  return async (env, config) => {
    refuseAnotherBundle(env, 'MODEL_GGUF', gguf.name, 'file', 'gguf');
    const source = bytesByteSource(new Uint8Array(gguf.bytes));
    const upstream = upstreamFromEnv(env);
    if (upstream !== null) {
      // Delegating: the file's tokenizer and template only, from its header.
      const model = await openGgufModel(source).catch((error: Error) => {
        throw new Error(`Cannot load the GGUF "${gguf.name}": ${error.message}`, { cause: error });
      });
      const files = { config: model.config, generationConfig: model.generationConfig, tokenizerJson: model.tokenizer.tokenizerJson, tokenizerConfig: model.tokenizer.tokenizerConfig };
      return { engine: workerRemoteEngine(upstream, config, files), sharedStepLoop: false, guideCompiler: forwardingGuideCompiler };
    }
    const limits = workerGgufLimitsFrom(env);
    let plan: WorkerGgufPlan | undefined;
    const started = Date.now();
    const { files, notes } = await ggufModelFiles(source, {
      name: gguf.name,
      ...ggufGraphOptionsFromSettings(env),
      builtWhere: 'built in this isolate from the bundled file',
      executedBy: 'onnxruntime-web (WebAssembly, one thread)',
      check: (model, options) => {
        plan = planWorkerGguf(gguf.name, model, options, limits);
      },
    });
    const { peakBytes, residentBytes, kvBudgetBytes } = plan!;
    const memory =
      `GGUF in the isolate: built in ${Date.now() - started} ms; about ${formatBytes(peakBytes)} at the peak, ${formatBytes(residentBytes)} resident, ` +
      `${formatBytes(kvBudgetBytes)} of the isolate's ${formatBytes(limits.memoryBytes)} left for the KV cache`;
    const schedulerLimits = schedulerLimitsOf(config);
    return workerLocalEngine(files, config, {
      limits: { ...schedulerLimits, kvCacheMemoryBytes: Math.min(schedulerLimits.kvCacheMemoryBytes, kvBudgetBytes) },
      notes: [...notes, memory],
    });
  };
}
