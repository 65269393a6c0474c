/**
 * How many threads a model call gets and which thread makes it, when the settings say
 * "auto". Both follow from the model's size: a small model's step is little more than
 * onnxruntime's fixed cost per call (~0.3 ms for the embedded model), which a second
 * intra-op thread only slows down and a worker's message round trip would outweigh; a
 * large model's step is many milliseconds of matrix work that a second core shortens and
 * that should not stall HTTP I/O. The thresholds are measured (README "Threads").
 */
export type ModelThread = 'main' | 'worker';
export type ModelThreadSetting = ModelThread | 'auto';
export type ThreadCountSetting = number | 'auto';

/**
 * Graph + external data bytes from which a model call gets more than one intra-op thread.
 * Measured on this project's 2-core machine (loaded, README "Threads"): the embedded
 * 260K model (1 MB) and a 5M-parameter one (22 MB) are fastest on one thread; a
 * 25M-parameter (104 MB) and a 106M-parameter (428 MB) model gain from two (without
 * spinning, see INTRA_OP_SPINNING).
 */
export const MULTI_THREAD_MIN_WEIGHT_BYTES = 64 * 1024 * 1024;

/**
 * Bytes from which the model call moves to a worker thread: from here a batch-1 step is
 * ~10 ms or more here, a stall HTTP I/O should not wait out, against a message round trip
 * of ~30 µs. Smaller models' steps (0.2–2 ms) gain nothing from a worker: with the
 * overlap (lanes.ts), the embedded model over HTTP ran 0.75× / 0.83× / 1.08× as fast at
 * 1 / 32 / 64 streams on this shared machine (README "Threads"), its extra CPU costing
 * more than the second core gave.
 */
export const WORKER_MIN_WEIGHT_BYTES = 64 * 1024 * 1024;

/**
 * Whether intra-op threads spin between the kernels of one model call (they stop when the
 * call returns). Measured here (135M q4, one request, tok/s, off → on; llama.cpp's server,
 * which polls by default, beside it): quiet 100 → 125 (llama.cpp 226); beside two busy
 * loops 66 → 91; beside six 91 → 111. What it costs: two engines of two threads each on
 * the same two cores, decoding at once, 107 → 68 tok/s together. The planner never does
 * that to itself (dataParallelSize splits the cores); an operator running several engines
 * on shared cores turns it off (`--no-intra-op-spinning`). Beside other multi-threaded work
 * (load 4–7, other engines and test runs) two spinning threads gave 53 tok/s where one
 * thread gave 102: such a host is better served by one thread.
 */
export const INTRA_OP_SPINNING = true;

/** More intra-op threads than this rarely pays for a decoder step (one token per row). */
const MAX_AUTO_THREADS = 4;

export interface ThreadPlanInput {
  /** The model's graph + external data bytes. */
  weightBytes: number;
  /** os.availableParallelism() */
  cores: number;
  /** Engine processes sharing the cores (dataParallelSize). */
  processes?: number;
  /** Where onnxruntime runs: worker threads exist for the native backend only. */
  backend?: 'native' | 'wasm';
}

export interface ThreadPlan {
  intraOpNumThreads: number;
  modelThread: ModelThread;
  /** Why, for the startup report. */
  reasons: string[];
}

/** The intra-op thread count "auto" means for this model on this machine. */
export function autoIntraOpThreads({ weightBytes, cores, processes = 1 }: ThreadPlanInput): number {
  if (weightBytes < MULTI_THREAD_MIN_WEIGHT_BYTES) return 1;
  return Math.max(1, Math.min(MAX_AUTO_THREADS, Math.floor(cores / Math.max(1, processes))));
}

/** The model thread "auto" means: a worker for models whose steps are long, on the native backend. */
export function autoModelThread({ weightBytes, backend = 'native' }: ThreadPlanInput): ModelThread {
  return backend === 'native' && weightBytes >= WORKER_MIN_WEIGHT_BYTES ? 'worker' : 'main';
}

/** Resolves both settings ("auto" or a value) into what the engine runs with. */
export function planThreads(
  settings: { intraOpNumThreads?: ThreadCountSetting; modelThread?: ModelThreadSetting },
  input: ThreadPlanInput,
): ThreadPlan {
  const reasons: string[] = [];
  const mb = (input.weightBytes / 1e6).toFixed(1);
  let intraOpNumThreads: number;
  if (settings.intraOpNumThreads === undefined || settings.intraOpNumThreads === 'auto') {
    intraOpNumThreads = autoIntraOpThreads(input);
    reasons.push(
      intraOpNumThreads === 1
        ? `1 intra-op thread (auto: a ${mb} MB model is fastest on one)`
        : `${intraOpNumThreads} intra-op threads (auto: ${mb} MB model, ${input.cores} cores${(input.processes ?? 1) > 1 ? ` over ${input.processes} processes` : ''})`,
    );
  } else {
    intraOpNumThreads = settings.intraOpNumThreads;
    reasons.push(`${intraOpNumThreads} intra-op thread${intraOpNumThreads === 1 ? '' : 's'} (intraOpNumThreads)`);
  }
  let modelThread: ModelThread;
  if (settings.modelThread === undefined || settings.modelThread === 'auto') {
    modelThread = autoModelThread(input);
    reasons.push(
      modelThread === 'worker'
        ? `model calls in a worker thread (auto: a ${mb} MB model's steps are long)`
        : input.backend === 'wasm'
          ? 'model calls on the main thread (auto: the wasm backend runs there)'
          : `model calls on the main thread (auto: a ${mb} MB model's steps are short)`,
    );
  } else {
    modelThread = settings.modelThread;
    reasons.push(`model calls on the ${modelThread === 'worker' ? 'worker' : 'main'} thread (modelThread)`);
  }
  return { intraOpNumThreads, modelThread, reasons };
}
