/**
 * ISOLATE_MEMORY_BYTES=... plans against another cap (to measure a model past Cloudflare's), MAX_SEQ_LEN=... serves a shorter context.
 *
 * What an embedding model holds in a Worker's isolate, measured in Node on the same
 * onnxruntime-web WebAssembly build the Worker runs (one thread), loaded by the same code
 * (embeddings/load.ts): the WebAssembly heap (its memory's size: it grows and never
 * shrinks, which is what an isolate is charged), the JavaScript heap after a full
 * collection, and the graph's bytes (a Data module in the Worker). Printed beside the
 * estimate the Worker plans by (src/runtime/worker/embedding-limits.ts), after the session
 * is created and after the largest model call the plan allows.
 *
 *   node --expose-gc --import tsx scripts/embeddings/measure-worker-memory.ts <folder> [onnx/model_quantized.onnx]
 *
 * The folder needs config.json and the graph; the tokenizer is test/fixtures/embeddings/bert-wordpiece's
 * when the folder has none (the inputs are token ids). Made by scripts/embeddings/worker_size_models.py.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-web';
import { formatBytes } from '../../src/engine/context-length.js';
import { embeddingContextOf, loadEmbeddingEngine, type EmbeddingModelFiles } from '../../src/embeddings/load.js';
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import { embeddingShapeOf, planWorkerEmbedding, workerEmbeddingPeakBytes } from '../../src/runtime/worker/embedding-limits.js';
import { workerGgufLimitsFrom } from '../../src/runtime/worker/gguf-limits.js';

const [folder, onnxFile = 'onnx/model.onnx'] = process.argv.slice(2);
if (folder === undefined) throw new Error('usage: measure-worker-memory.ts <folder> [onnx file]');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

// The WebAssembly memory onnxruntime-web creates or exports, caught as it is instantiated.
const memories: WebAssembly.Memory[] = [];
const instantiate = WebAssembly.instantiate.bind(WebAssembly);
(WebAssembly as { instantiate: unknown }).instantiate = async (source: unknown, imports?: Record<string, Record<string, unknown>>) => {
  for (const module of Object.values(imports ?? {})) for (const value of Object.values(module)) if (value instanceof WebAssembly.Memory) memories.push(value);
  const result = (await instantiate(source as BufferSource, imports as WebAssembly.Imports)) as unknown as WebAssembly.WebAssemblyInstantiatedSource | WebAssembly.Instance;
  const instance = 'instance' in result ? result.instance : result;
  for (const value of Object.values(instance.exports)) if (value instanceof WebAssembly.Memory) memories.push(value);
  return result;
};

const json = (name: string, fallback?: string) => {
  const path = join(folder, name);
  if (existsSync(path)) return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  if (fallback !== undefined) return JSON.parse(readFileSync(fallback, 'utf8')) as Record<string, unknown>;
  return undefined;
};
const fallbackTokenizer = 'test/fixtures/embeddings/bert-wordpiece';
const graph = readFileSync(join(folder, onnxFile));
const files: EmbeddingModelFiles = {
  config: json('config.json')!,
  tokenizerJson: json('tokenizer.json', join(fallbackTokenizer, 'tokenizer.json'))!,
  tokenizerConfig: json('tokenizer_config.json', join(fallbackTokenizer, 'tokenizer_config.json'))!,
  moduleConfigs: {},
  onnx: new Uint8Array(graph.buffer, graph.byteOffset, graph.byteLength),
  onnxFile,
};

function measure(): { wasm: number; heap: number } {
  gc!();
  const wasm = memories.reduce((sum, memory) => sum + memory.buffer.byteLength, 0);
  return { wasm, heap: process.memoryUsage().heapUsed };
}

const before = measure();
ort.env.wasm.numThreads = 1;
ort.env.wasm.proxy = false;
const context = embeddingContextOf(files, process.env.MAX_SEQ_LEN ? Number(process.env.MAX_SEQ_LEN) : null).maxModelLen;
const shape = embeddingShapeOf(files.config, context)!;
const fileBytes = statSync(join(folder, onnxFile)).size;
const plan = planWorkerEmbedding(folder, fileBytes, shape, 8192, workerGgufLimitsFrom(process.env));
const engine = await loadEmbeddingEngine({
  ort: ort as unknown as OrtRuntime,
  files,
  servedModelName: 'measured',
  limits: { maxRunningSequences: 256, maxBatchedTokens: plan.maxBatchedTokens, maxWaitingRequests: 8 },
  sessionOptions: { graphOptimizationLevel: 'all', enableCpuMemArena: process.env.ORT_ARENA !== 'false' },
});
const session = measure();
const rows = (count: number, length: number) => Array.from({ length: count }, (_, row) => Array.from({ length }, (_, i) => 5 + ((row * 31 + i * 7) % 300)));
// The heap never shrinks: what to compare with is the largest plan so far.
let planned = 0;
const report = (label: string, m: { wasm: number; heap: number }, estimate: number) =>
  (planned = Math.max(planned, estimate)) &&
  console.log(
    `${label}: WebAssembly ${formatBytes(m.wasm)}, JS heap ${formatBytes(m.heap - before.heap)} (+${formatBytes(before.heap)} before), graph ${formatBytes(fileBytes)}; ` +
      `total ${formatBytes(m.wasm + m.heap + fileBytes)} against the plan's ${formatBytes(planned)}`,
  );
console.log(`${folder} ${onnxFile}: ${shape.layers} layers × ${shape.hidden}, context ${context}; the plan lets a call pad to ${plan.maxBatchedTokens} tokens`);
report('after the session', session, workerEmbeddingPeakBytes(fileBytes, shape, 0, 0));
for (const [count, length] of [
  [1, Math.min(context, 128)],
  [Math.max(1, Math.floor(plan.maxBatchedTokens / 128)), Math.min(context, 128)],
  [1, context],
  [Math.max(1, Math.floor(plan.maxBatchedTokens / context)), context],
] as const) {
  await engine.embed({ inputs: rows(count, length) });
  report(`after ${count} × ${length} tokens`, measure(), workerEmbeddingPeakBytes(fileBytes, shape, count * length, length));
}
await engine.dispose();
