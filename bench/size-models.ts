/**
 * The bench's 135M-shaped model: SmolLM2-135M's shape (hidden 576, 30 layers, 9 heads, 3 KV
 * heads, intermediate 1536, vocabulary 49152, tied embeddings) with seeded random weights and
 * a synthetic 49152-piece vocabulary, written once into a cache outside the repository:
 * - onnx/: our converter's folder, fp32 (onnx/model.onnx) and q4 (onnx/model_q4.onnx), each
 *   with its in-place KV twin (model.inplace.onnx, model_q4.inplace.onnx);
 * - model-f32.gguf and model-q4_0.gguf: the same checkpoint and vocabulary for llama.cpp
 *   (the Q4_0 blocks are the q4 graph's).
 * No real model: nothing is downloaded.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { convertCheckpoint, writeConvertedFiles } from '../src/convert/convert-llama2c-model.js';
import type { DecoderCheckpoint } from '../src/graph/decoder-checkpoint.js';
import { writeGgufFile } from '../scripts/convert/gguf-writer.js';
import { buildLlamaGguf } from '../scripts/convert/llama-gguf.js';
import { seededRandom } from '../scripts/seeded-random.js';
import { randomLlamaCheckpoint } from '../scripts/convert/random-checkpoint.js';

export const SMOLLM2_135M_SHAPE = {
  dim: 576,
  hiddenDim: 1536,
  nLayers: 30,
  nHeads: 9,
  nKvHeads: 3,
  vocabSize: 49152,
  seqLen: 1024,
  ropeTheta: 100000,
} as const;

/**
 * Bump when the weights, vocabulary or file layout change: a new cache folder is built.
 * 2: the q4 graph at MatMulNBits accuracy level 4 with a 4-bit (GatherBlockQuantized) embedding.
 * 3: the graphs take num_logits_to_keep.
 * 4: the fp32 graph's in-place KV twin beside it.
 * 5: the q4 graph's in-place KV twin (onnx/model_q4.inplace.onnx) beside it.
 * 6: the in-place twins output every layer's new keys and values as one new_key_values.
 * 7: tokenizer_config.json's model_max_length is the checkpoint's 1024 (was the converter's 512).
 */
const FORMAT = 7;
export const SEED = 135;

export interface BenchModelFiles {
  label: string;
  /** The Hugging Face layout folder (MODEL_DIR), with fp32 and q4 graphs. */
  onnxDir: string;
  gguf: { F32: string; Q4_0: string };
  /** Pieces usable in prompts (no control or byte pieces). */
  promptTokenRange: [number, number];
}

export function benchModelCache(): string {
  return process.env.BENCH_MODEL_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edge-llm', 'bench-models');
}

export function randomCheckpoint(seed: number): DecoderCheckpoint {
  return randomLlamaCheckpoint({ ...SMOLLM2_135M_SHAPE, tiedClassifier: true }, seed);
}

const FIRST_WORD_PIECE = 3 + 256;

/**
 * A llama2.c tokenizer.bin of `size` pieces: <unk>, <s>, </s>, the 256 byte pieces, single
 * characters, then seeded concatenations of two earlier pieces (so every piece is a merge of
 * two others, as BPE vocabularies are), scored so earlier pieces merge first.
 */
export function syntheticTokenizer(size: number, seed: number): Uint8Array {
  const random = seededRandom(seed);
  const pieces: string[] = ['<unk>', '\n<s>\n', '\n</s>\n'];
  for (let b = 0; b < 256; b++) pieces.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const seen = new Set(pieces);
  const alphabet = " abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?;:'\"-()";
  for (const ch of alphabet) {
    pieces.push(ch);
    seen.add(ch);
  }
  while (pieces.length < size) {
    // Favour recent pieces a little less than uniform picks would: lengths stay moderate.
    const pick = () => pieces[FIRST_WORD_PIECE + Math.floor(random() * (pieces.length - FIRST_WORD_PIECE))];
    const piece = pick() + pick();
    if (piece.length > 16 || seen.has(piece)) continue;
    seen.add(piece);
    pieces.push(piece);
  }
  const encoder = new TextEncoder();
  const encoded = pieces.map((p) => encoder.encode(p));
  const total = 4 + encoded.reduce((sum, e) => sum + 8 + e.byteLength, 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setInt32(0, Math.max(...encoded.map((e) => e.byteLength)), true);
  let at = 4;
  encoded.forEach((bytes, id) => {
    view.setFloat32(at, id < FIRST_WORD_PIECE ? 0 : -(id - FIRST_WORD_PIECE), true);
    view.setInt32(at + 4, bytes.byteLength, true);
    out.set(bytes, at + 8);
    at += 8 + bytes.byteLength;
  });
  return out;
}

/** Builds the files unless the cache has them (a few minutes on 2 cores; ~1.1 GB on disk). */
export async function ensureBenchModel(log: (line: string) => void = console.log): Promise<BenchModelFiles> {
  const label = `smollm2-135m-shape-seed${SEED}-v${FORMAT}`;
  const dir = join(benchModelCache(), label);
  const files: BenchModelFiles = {
    label,
    onnxDir: join(dir, 'hf'),
    gguf: { F32: join(dir, 'model-f32.gguf'), Q4_0: join(dir, 'model-q4_0.gguf') },
    promptTokenRange: [FIRST_WORD_PIECE, SMOLLM2_135M_SHAPE.vocabSize],
  };
  const done = join(dir, 'complete');
  if (existsSync(done)) return files;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started = performance.now();
  log(`building the 135M-shaped bench model into ${dir} (once)`);
  const ckpt = randomCheckpoint(SEED);
  const tokenizer = syntheticTokenizer(SMOLLM2_135M_SHAPE.vocabSize, SEED);
  for (const weights of ['F32', 'Q4_0'] as const) {
    writeGgufFile(files.gguf[weights], buildLlamaGguf(ckpt, tokenizer, { weights, name: label }));
  }
  // q4 as the converter writes it by default (weight-dtype.ts): what `--dtype q4` users run.
  await writeConvertedFiles(files.onnxDir, convertCheckpoint(ckpt, tokenizer, { dtypes: ['fp32', 'q4'] }));
  // The fp32 graph's in-place KV twin, as the embedded model ships one: Node serves it (the
  // cache is not copied in and out of every step), the worker thread included.
  // And the q4 graph's twin: the same MatMulNBits blocks, the cache kept by the engine.
  const inPlace = convertCheckpoint(ckpt, tokenizer, { dtypes: ['fp32', 'q4'], ops: 'inplace' });
  writeFileSync(join(files.onnxDir, 'onnx', 'model.inplace.onnx'), inPlace['onnx/model.onnx']);
  writeFileSync(join(files.onnxDir, 'onnx', 'model_q4.inplace.onnx'), inPlace['onnx/model_q4.onnx']);
  writeFileSync(done, `${new Date().toISOString()}\n`);
  log(`built in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return files;
}
