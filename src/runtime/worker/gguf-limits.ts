/**
 * Whether a GGUF fits a Cloudflare Worker, judged from its header: checked when the build
 * bundles it (scripts/build-worker-gguf.ts) and again when an isolate starts it
 * (worker-gguf-engine.ts), so a file past the limits is refused with the figures before
 * an upload fails or an isolate dies in the middle of the build.
 *
 * Cloudflare's limits page (developers.cloudflare.com/workers/platform/limits/, read
 * December 2026): Worker size 64 MiB on every plan (the upload: code, modules, the
 * GGUF; the former compressed limits of 3 MB / 10 MB are gone); memory 128 MB per
 * isolate, JavaScript heap and WebAssembly together; startup 1 s (the graph is built on
 * the first request, not at startup).
 */
import { formatBytes } from '../../engine/context-length.js';
import { ggufFootprint, type GgufFootprint } from '../../gguf/gguf-footprint.js';
import type { GgufGraphOptions, GgufModel } from '../../gguf/gguf-model.js';

/** Cloudflare's Worker size limit: the whole upload, uncompressed, every plan. */
export const WORKER_SIZE_LIMIT_BYTES = 64 * 1024 ** 2;

/** Cloudflare's "128 MB" of memory per isolate, read as the smaller 128 × 10^6 bytes. */
export const WORKER_MEMORY_LIMIT_BYTES = 128 * 1000 ** 2;

/**
 * The GGUF Worker's upload without the GGUF, rounded up: `wrangler deploy --dry-run --env
 * gguf` (wrangler 4.86) measured 18,486 KiB beside the model (17,097 KiB with --minify):
 * onnxruntime-web's .wasm (13.6 MiB), XGrammar's .wasm (0.7 MiB), the Worker's code (3.8 MiB,
 * XGrammar's JS with its embedded copy of the binary among it).
 */
export const WORKER_CODE_BYTES = 19 * 1024 ** 2;

/** What an isolate holds before any model: onnxruntime-web's WebAssembly instance and arena, the app, its tokenizer. */
export const WORKER_RUNTIME_BYTES = 24 * 1024 ** 2;

export interface WorkerGgufLimits {
  /** The isolate's memory cap (ISOLATE_MEMORY_BYTES; Cloudflare's 128 MB unless set). */
  memoryBytes: number;
  sizeBytes: number;
}

export const CLOUDFLARE_WORKER_LIMITS: WorkerGgufLimits = { memoryBytes: WORKER_MEMORY_LIMIT_BYTES, sizeBytes: WORKER_SIZE_LIMIT_BYTES };

export interface WorkerGgufPlan extends GgufFootprint {
  /** The most the isolate holds: while the graph is built, or while onnxruntime takes the weights. */
  peakBytes: number;
  /** What serving holds before any KV cache: the file, the runtime, onnxruntime's weights. */
  residentBytes: number;
  /** What is left of the isolate's memory for the KV cache. */
  kvBudgetBytes: number;
}

const mib = (bytes: number) => formatBytes(bytes);

/**
 * The memory plan for serving `model` in an isolate, or an error saying which limit it is
 * past and by how much. `name` names the file in messages.
 */
export function planWorkerGguf(name: string, model: GgufModel, options: GgufGraphOptions, limits: WorkerGgufLimits = CLOUDFLARE_WORKER_LIMITS): WorkerGgufPlan {
  const footprint = ggufFootprint(model, options);
  const upload = footprint.fileBytes + WORKER_CODE_BYTES;
  if (upload > limits.sizeBytes) {
    throw new Error(
      `${name} is ${mib(footprint.fileBytes)}: with the Worker's code (${mib(WORKER_CODE_BYTES)}) the upload would be ${mib(upload)}, ` +
        `over the Worker size limit of ${mib(limits.sizeBytes)}. A Worker can bundle a GGUF of at most ${mib(limits.sizeBytes - WORKER_CODE_BYTES)}.`,
    );
  }
  const base = footprint.fileBytes + WORKER_RUNTIME_BYTES;
  // While onnxruntime creates the session: the external data buffer beside its own copies.
  const sessionBytes = footprint.graphWeightBytes + footprint.servingBytes;
  const peakBytes = base + Math.max(footprint.buildBytes, sessionBytes);
  const residentBytes = base + footprint.servingBytes;
  if (peakBytes > limits.memoryBytes) {
    const perWeight = (peakBytes - WORKER_RUNTIME_BYTES) / Math.max(1, footprint.weights);
    const fitting = Math.max(0, (limits.memoryBytes - WORKER_RUNTIME_BYTES) / perWeight);
    throw new Error(
      `${name} would need about ${mib(peakBytes)} in the isolate while its graph is built ` +
        `(the file ${mib(footprint.fileBytes)}, the build ${mib(footprint.buildBytes)} for ${(footprint.weights / 1e6).toFixed(1)} M weights, onnxruntime and the app ${mib(WORKER_RUNTIME_BYTES)}), ` +
        `more than the isolate's ${mib(limits.memoryBytes)} (ISOLATE_MEMORY_BYTES; a Cloudflare Worker has 128 MB). ` +
        `A GGUF like this one fits with at most about ${(fitting / 1e6).toFixed(1)} M weights.`,
    );
  }
  return { ...footprint, peakBytes, residentBytes, kvBudgetBytes: limits.memoryBytes - residentBytes };
}

/** ISOLATE_MEMORY_BYTES from a Worker's vars (or the build's environment): the memory cap to plan against. */
export function workerGgufLimitsFrom(settings: { ISOLATE_MEMORY_BYTES?: unknown }): WorkerGgufLimits {
  const raw = settings.ISOLATE_MEMORY_BYTES;
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) return CLOUDFLARE_WORKER_LIMITS;
  const bytes = Number(typeof raw === 'string' ? raw.trim() : raw);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new Error(`ISOLATE_MEMORY_BYTES must be a whole number of bytes, got ${JSON.stringify(raw)}`);
  return { ...CLOUDFLARE_WORKER_LIMITS, memoryBytes: bytes };
}
