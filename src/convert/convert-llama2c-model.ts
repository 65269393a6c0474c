/** llama2.c checkpoint + tokenizer -> the files of a Hugging Face ONNX decoder export. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { buildGenerationConfig, buildHfConfig, LLAMA2C_RMS_NORM_EPS } from './hf-config.js';
import { buildLlamaGraph, EXTRA_OPSETS, type GraphOps } from '../graph/llama-onnx-graph.js';
import { type DecoderCheckpoint } from '../graph/decoder-checkpoint.js';
import { readLlama2cCheckpoint } from './llama2c-checkpoint.js';
import { MS_DOMAIN } from '../graph/llama-graph-blocks.js';
import { convertLlama2cTokenizer } from './llama2c-tokenizer.js';
import { encodeOnnxModel, ONNX_IR_VERSION, ONNX_OPSET } from '../graph/onnx-writer.js';
import { inferRopeTheta } from '../graph/rope.js';
import { applyWeightDtype, checkpointOnWeightGrid, ONNX_FILE_OF_DTYPE, type WeightDtype, type WeightDtypeOptions } from '../graph/weight-dtype.js';

export const PRODUCER_NAME = 'edge-llm convert-llama2c';
export const PRODUCER_VERSION = '0.1.0';

/** Relative path -> contents, in the layout transformers.js / Optimum use. */
export type ConvertedFiles = Record<string, string | Uint8Array>;

export interface ConvertOptions extends WeightDtypeOptions {
  /** Graph flavour (see llama-onnx-graph.ts); `fused` by default. */
  ops?: GraphOps;
  /** Weight storage of the graphs to write, one file each (weight-dtype.ts); `['fp32']` by default. */
  dtypes?: readonly WeightDtype[];
  /** false: graphs without the num_logits_to_keep input (logits-to-keep.ts); true by default. */
  logitsToKeep?: boolean;
}

export function convertLlama2cModel(
  checkpoint: Uint8Array,
  tokenizer: Uint8Array,
  options: ConvertOptions = {},
): ConvertedFiles {
  return convertCheckpoint(readLlama2cCheckpoint(checkpoint), tokenizer, options);
}

/** The same from a checkpoint already in memory (the bench builds its models this way). */
export function convertCheckpoint(ckpt: DecoderCheckpoint, tokenizer: Uint8Array, options: ConvertOptions = {}): ConvertedFiles {
  const { seqLen } = ckpt.header;
  const ops = options.ops ?? 'fused';
  const ropeTheta = inferRopeTheta(ckpt.freqCisReal, ckpt.freqCisImag, seqLen, ckpt.headDim);
  const graphs: ConvertedFiles = {};
  for (const dtype of options.dtypes ?? ['fp32']) {
    const graph = applyWeightDtype(buildLlamaGraph(checkpointOnWeightGrid(ckpt, dtype), { rmsNormEps: LLAMA2C_RMS_NORM_EPS, ops, logitsToKeep: options.logitsToKeep }), dtype, options);
    graphs[ONNX_FILE_OF_DTYPE[dtype]] = encodeOnnxModel({
      extraOpsets: dtype === 'q4' ? { ...EXTRA_OPSETS[ops], [MS_DOMAIN]: 1 } : EXTRA_OPSETS[ops],
      irVersion: ONNX_IR_VERSION,
      opsetVersion: ONNX_OPSET,
      producerName: PRODUCER_NAME,
      producerVersion: PRODUCER_VERSION,
      docString: 'Llama decoder with KV cache, converted from a llama2.c checkpoint.',
      graph,
    });
  }
  const { tokenizerJson, tokenizerConfig } = convertLlama2cTokenizer(tokenizer);
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  return {
    'config.json': json(buildHfConfig(ckpt, ropeTheta)),
    'generation_config.json': json(buildGenerationConfig()),
    'tokenizer.json': json(tokenizerJson),
    // The checkpoint's own context, not the tokenizer converter's 512: a longer checkpoint
    // would otherwise be served at 512 (max_model_len takes the lower of the two).
    'tokenizer_config.json': json({ ...tokenizerConfig, model_max_length: seqLen }),
    ...graphs,
  };
}

export async function writeConvertedFiles(outDir: string, files: ConvertedFiles): Promise<void> {
  for (const [path, contents] of Object.entries(files)) {
    const target = join(outDir, path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, contents);
  }
}
