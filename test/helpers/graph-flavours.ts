/**
 * The graph flavours the engine serves, for tests that check a behaviour keeps greedy output
 * unchanged on every one: the converter's four (fused, gqa and portable with present.*
 * outputs, inplace with the engine-kept cache), a q4 graph, and the model worker's remote
 * cache. `greedyRun` reads one generation's tokens and what its prompt reused.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { convertLlama2cModel, writeConvertedFiles } from '../../src/convert/convert-llama2c-model.js';
import type { GraphOps } from '../../src/graph/llama-onnx-graph.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import type { GenerationDelta } from '../../src/engine/types.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { sharedModelFile } from '../convert/model-paths.js';

export interface GraphFlavour {
  name: string;
  ops: GraphOps;
  dtype: 'fp32' | 'q4';
  modelThread: 'main' | 'worker';
}

export const GRAPH_FLAVOURS: GraphFlavour[] = [
  { name: 'inplace', ops: 'inplace', dtype: 'fp32', modelThread: 'main' },
  { name: 'fused (present.* outputs)', ops: 'fused', dtype: 'fp32', modelThread: 'main' },
  { name: 'gqa', ops: 'gqa', dtype: 'fp32', modelThread: 'main' },
  { name: 'portable', ops: 'portable', dtype: 'fp32', modelThread: 'main' },
  { name: 'fused q4', ops: 'fused', dtype: 'q4', modelThread: 'main' },
  { name: 'inplace in the model worker', ops: 'inplace', dtype: 'fp32', modelThread: 'worker' },
  { name: 'fused in the model worker', ops: 'fused', dtype: 'fp32', modelThread: 'worker' },
];

/** stories260K converted in `flavour`'s graph into a new folder; `remove` deletes it. */
export async function convertedFlavour(flavour: GraphFlavour, prefix: string): Promise<{ dir: string; engineOptions: { modelDir: string; dtype: 'fp32' | 'q4'; modelThread: 'main' | 'worker' }; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const files = convertLlama2cModel(await readFile(sharedModelFile('stories260K.bin')), await readFile(sharedModelFile('tok512.bin')), {
    ops: flavour.ops,
    dtypes: [flavour.dtype],
  });
  await writeConvertedFiles(dir, files);
  return {
    dir,
    engineOptions: { modelDir: dir, dtype: flavour.dtype, modelThread: flavour.modelThread },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

export interface GreedyRun {
  tokenIds: number[];
  /** The prompt tokens the engine reused (its first delta's cachedPromptTokens; -1 if it said none). */
  cached: number;
}

export async function greedyRun(
  engine: LocalEngine,
  prompt: number[],
  params: object,
  onToken?: (count: number) => void,
  signal?: AbortSignal,
): Promise<GreedyRun> {
  const tokenIds: number[] = [];
  let cached = -1;
  for await (const delta of engine.generate({ promptTokenIds: prompt, params: defaultSamplingParams(params), signal }) as AsyncIterable<GenerationDelta>) {
    if (cached < 0) cached = delta.cachedPromptTokens ?? -1;
    tokenIds.push(...delta.tokenIds);
    if (delta.tokenIds.length > 0) onToken?.(delta.tokenIds.length);
  }
  return { tokenIds, cached };
}
