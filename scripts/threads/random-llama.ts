/**
 * A seeded random-weight Llama model folder of a chosen shape, for measuring thread
 * settings on models larger than the embedded one (nothing here is committed: the folder
 * goes to ~/.cache/edge-llm/). The embedded model's 512-piece tokenizer is reused, so the
 * weights are the transformer blocks' (a 135M-shaped model with this vocabulary has ~106M).
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildGenerationConfig, buildHfConfig } from '../../src/convert/hf-config.js';
import { buildLlamaGraph, EXTRA_OPSETS } from '../../src/graph/llama-onnx-graph.js';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { moveWeightsToExternalData } from '../../src/graph/graph-variants.js';
import { encodeOnnxModel } from '../../src/graph/onnx-writer.js';
import { randomLlamaCheckpoint } from '../convert/random-checkpoint.js';

export interface LlamaShape {
  dim: number;
  hiddenDim: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  seqLen: number;
}

/** SmolLM2-135M's transformer (30 layers, 576 wide, 9 heads, 3 KV heads). */
export const SHAPE_135M: LlamaShape = { dim: 576, hiddenDim: 1536, nLayers: 30, nHeads: 9, nKvHeads: 3, seqLen: 512 };
/** ~5M parameters (21 MB): the long-step model of the event-loop test. */
export const SHAPE_5M: LlamaShape = { dim: 256, hiddenDim: 768, nLayers: 6, nHeads: 4, nKvHeads: 4, seqLen: 512 };
/** A ~25M-parameter shape between the embedded model and the 135M one. */
export const SHAPE_25M: LlamaShape = { dim: 512, hiddenDim: 1376, nLayers: 8, nHeads: 8, nKvHeads: 8, seqLen: 512 };

const EMBEDDED = new URL('../../models/stories260k/', import.meta.url);

function randomCheckpoint(shape: LlamaShape, vocabSize: number, seed: number): DecoderCheckpoint {
  return randomLlamaCheckpoint({ ...shape, vocabSize }, seed);
}

/** Builds the folder once (by shape and seed, under `parent`, default ~/.cache/edge-llm) and returns its path. */
export async function randomLlamaFolder(shape: LlamaShape, seed = 16, parent = join(homedir(), '.cache', 'edge-llm')): Promise<string> {
  const name = `random-llama-${shape.dim}x${shape.nLayers}-h${shape.nHeads}kv${shape.nKvHeads}-ff${shape.hiddenDim}-s${seed}`;
  const dir = join(parent, name);
  if (existsSync(join(dir, 'config.json'))) return dir;
  const building = `${dir}.building`;
  await rm(building, { recursive: true, force: true });
  await mkdir(join(building, 'onnx'), { recursive: true });
  const embeddedConfig = JSON.parse(await readFile(new URL('config.json', EMBEDDED), 'utf8')) as { vocab_size: number };
  const ckpt = randomCheckpoint(shape, embeddedConfig.vocab_size, seed);
  const graph = buildLlamaGraph(ckpt, { rmsNormEps: 1e-5, ops: 'fused' });
  const split = moveWeightsToExternalData(graph, 'model.onnx_data');
  const onnx = encodeOnnxModel({ irVersion: 8, opsetVersion: 17, producerName: 'edge-llm random-llama', producerVersion: '0', graph: split.graph, extraOpsets: EXTRA_OPSETS.fused });
  await writeFile(join(building, 'onnx', 'model.onnx'), onnx);
  for (const file of split.files) await writeFile(join(building, 'onnx', file.name), file.data);
  await writeFile(join(building, 'config.json'), JSON.stringify(buildHfConfig(ckpt, 10000), null, 2));
  await writeFile(join(building, 'generation_config.json'), JSON.stringify(buildGenerationConfig(), null, 2));
  for (const file of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(new URL(file, EMBEDDED), join(building, file));
  await rm(dir, { recursive: true, force: true });
  await rename(building, dir);
  return dir;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const shape = process.argv[2] === '25m' ? SHAPE_25M : process.argv[2] === '5m' ? SHAPE_5M : SHAPE_135M;
  console.log(await randomLlamaFolder(shape));
}

/** The measuring scripts' model argument: a folder path, or 135m / 25m / 5m (built once) or embedded. */
export async function measuredModelDir(arg: string): Promise<string> {
  if (arg === '135m') return randomLlamaFolder(SHAPE_135M);
  if (arg === '25m') return randomLlamaFolder(SHAPE_25M);
  if (arg === '5m') return randomLlamaFolder(SHAPE_5M);
  if (arg === 'embedded') return fileURLToPath(EMBEDDED);
  return arg;
}
