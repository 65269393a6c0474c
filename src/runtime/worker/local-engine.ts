import { schedulerLimitsOf, type ServerConfig } from '../../config/server-config.js';
import { fetchAdapterReader } from '../../adapters/fetch-reader.js';
import { formatLoadReport } from '../../engine/loading/load-report.js';
import { LocalEngine } from '../../engine/local-engine.js';
import type { ModelFiles } from '../../onnx/model-files.js';
import type { SchedulerLimits } from '../../engine/scheduler-limits.js';
import { loraOptionsOf } from '../lora-options.js';
import { workerGuideCompiler } from './guides.js';
import type { WorkerEngine } from './handler.js';
import { workerOrt } from './ort.js';

/**
 * The model run in the isolate on onnxruntime-web's WebAssembly backend, as both model
 * entries (the embedded ONNX, a bundled GGUF) start it; `notes` lead its startup report,
 * which goes to the Worker's logs as `npm start` prints it.
 */
export async function workerLocalEngine(files: ModelFiles, config: ServerConfig, options: { limits?: SchedulerLimits; notes?: string[] } = {}): Promise<WorkerEngine> {
  const engine = await LocalEngine.create({
    ort: workerOrt(),
    files,
    servedModelName: config.servedModelName,
    sessionOptions: { graphOptimizationLevel: 'all' },
    limits: options.limits ?? schedulerLimitsOf(config),
    // LORA_MODULES paths are URLs here (a Worker has no disk), fetched once per isolate.
    lora: loraOptionsOf(config, fetchAdapterReader()),
  });
  engine.loadReport.notes.unshift(...(options.notes ?? []));
  const report = formatLoadReport(engine.loadReport);
  for (const line of report.info) console.log(line);
  for (const line of report.warnings) console.warn(`Warning: ${line}`);
  return { engine, sharedStepLoop: true, guideCompiler: workerGuideCompiler(engine) };
}
