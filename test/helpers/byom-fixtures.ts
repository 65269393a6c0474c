/**
 * "Bring your own model" fixtures: a small seeded random-weight llama-architecture model,
 * written as a model folder in the layouts other exporters produce (variant file names,
 * external data, float16 KV/logits, no position_ids, GroupQueryAttention wired as
 * onnxruntime-genai wires it, ...), with a byte-level BPE tokenizer and a ChatML template.
 * Built in a few milliseconds per folder, so nothing large is committed. The independent
 * oracle is the llama2.c reference forward pass (test/convert/llama2c-reference.ts).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { buildLlamaGraph, EXTRA_OPSETS } from '../../src/graph/llama-onnx-graph.js';
import { buildGenaiGqaLlamaGraph } from '../../src/graph/llama-graph-gqa.js';
import { moveWeightsToExternalData, rewriteDecoderLayout, type DecoderLayoutOptions } from '../../src/graph/graph-variants.js';
import { encodeOnnxModel, type OnnxGraph } from '../../src/graph/onnx-writer.js';
import { Llama2cReference } from '../convert/llama2c-reference.js';
import { randomLlamaCheckpoint } from '../../scripts/convert/random-checkpoint.js';

export const FIXTURE_DIMS = { dim: 32, hiddenDim: 64, nLayers: 2, nHeads: 4, nKvHeads: 2, seqLen: 96 } as const;

export type CheckpointDims = { [K in keyof typeof FIXTURE_DIMS]: number };

/** A seeded random-weight checkpoint; `dims` default to the fixtures' tiny shape (the bench builds larger ones). */
export function randomCheckpoint(seed: number, vocabSize: number, dims: CheckpointDims = FIXTURE_DIMS): DecoderCheckpoint {
  return randomLlamaCheckpoint({ ...dims, vocabSize }, seed);
}

/** GPT-2's byte → printable character table, which byte-level BPE vocabularies are written in. */
function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const table: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) table[b] = String.fromCodePoint(printable.includes(b) ? b : 256 + extra++);
  return table;
}

const MERGES: Array<[string, string]> = [
  ['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['Ġ', 'a'], ['i', 'n'], ['o', 'n'], ['e', 'r'], ['Ġ', 's'], ['r', 'e'], ['a', 't'],
  ['Ġ', 'w'], ['o', 'r'], ['e', 'n'], ['Ġ', 'c'], ['i', 's'], ['a', 'n'], ['Ġ', 'o'], ['Ġ', 'b'], ['e', 's'], ['i', 't'], ['Ġ', 'f'],
];

export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** A Qwen-style byte-level BPE tokenizer: 256 bytes, a few merges, <|endoftext|>, <|im_start|>, <|im_end|>. */
export function byteLevelTokenizerFiles(): {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  vocabSize: number;
  special: { endOfText: number; imStart: number; imEnd: number };
} {
  const vocab: Record<string, number> = {};
  for (const char of bytesToUnicode()) vocab[char] = Object.keys(vocab).length;
  for (const [a, b] of MERGES) vocab[a + b] = Object.keys(vocab).length;
  const base = Object.keys(vocab).length;
  const special = { endOfText: base, imStart: base + 1, imEnd: base + 2 };
  const added = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [added(special.endOfText, '<|endoftext|>'), added(special.imStart, '<|im_start|>'), added(special.imEnd, '<|im_end|>')],
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges: MERGES.map(([a, b]) => `${a} ${b}`),
    },
  };
  const tokenizerConfig = {
    add_prefix_space: false,
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    chat_template: CHATML_TEMPLATE,
    clean_up_tokenization_spaces: false,
    model_max_length: 131072,
    tokenizer_class: 'Qwen2Tokenizer',
  };
  return { tokenizerJson, tokenizerConfig, vocabSize: base + 3, special };
}

export const FIXTURE_SEED = 20261201;
let sharedCheckpoint: DecoderCheckpoint | undefined;

/** The fixtures' one checkpoint (its vocabulary is the tokenizer's). */
export function fixtureCheckpoint(): DecoderCheckpoint {
  sharedCheckpoint ??= randomCheckpoint(FIXTURE_SEED, byteLevelTokenizerFiles().vocabSize);
  return sharedCheckpoint;
}

export function qwen2Config(ckpt: DecoderCheckpoint): Record<string, unknown> {
  const h = ckpt.header;
  const { special } = byteLevelTokenizerFiles();
  return {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    hidden_size: h.dim,
    intermediate_size: h.hiddenDim,
    num_hidden_layers: h.nLayers,
    num_attention_heads: h.nHeads,
    num_key_value_heads: h.nKvHeads,
    vocab_size: h.vocabSize,
    max_position_embeddings: h.seqLen,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    tie_word_embeddings: false,
    bos_token_id: special.endOfText,
    eos_token_id: special.imEnd,
    torch_dtype: 'float32',
  };
}

export type FixtureGraph = 'fused' | 'gqa' | 'portable' | 'gqa-genai' | 'inplace';

export interface FixtureFolderOptions {
  graph?: FixtureGraph;
  layout?: DecoderLayoutOptions;
  /** Graph file names inside the folder (one graph written under each); default onnx/model.onnx. */
  files?: string[];
  /** Move the weights to external data, split into files of at most this many bytes (Infinity: one file). */
  externalDataMaxFileBytes?: number;
  config?: Record<string, unknown>;
  /** Replaces the tokenizer_config.json fields given. */
  tokenizerConfig?: Record<string, unknown>;
  /** null: no generation_config.json. */
  generationConfig?: Record<string, unknown> | null;
}

/**
 * The graph in an exporter's layout. Like Optimum's exports, it has no num_logits_to_keep
 * input unless `layout.logitsToKeep` adds one (after the lm_head) or `converterLogitsToKeep`
 * keeps the converter's own (before it, src/graph/logits-to-keep.ts).
 */
export function buildFixtureGraph(graph: FixtureGraph = 'fused', layout: DecoderLayoutOptions = {}, converterLogitsToKeep = false): OnnxGraph {
  const ckpt = fixtureCheckpoint();
  const base =
    graph === 'gqa-genai'
      ? buildGenaiGqaLlamaGraph(ckpt, 1e-5)
      : buildLlamaGraph(ckpt, { rmsNormEps: 1e-5, ops: graph, logitsToKeep: converterLogitsToKeep });
  return rewriteDecoderLayout(base, layout);
}

export function encodeFixtureGraph(graph: OnnxGraph, fixtureGraph: FixtureGraph = 'fused'): Uint8Array {
  const extraOpsets = fixtureGraph === 'gqa-genai' ? EXTRA_OPSETS.gqa : EXTRA_OPSETS[fixtureGraph];
  return encodeOnnxModel({ irVersion: 8, opsetVersion: 17, producerName: 'edge-llm-test', producerVersion: '0', graph, extraOpsets });
}

const folders: string[] = [];

/** Writes a model folder to a fresh temporary directory; returns its path. */
export async function writeFixtureFolder(options: FixtureFolderOptions = {}): Promise<string> {
  const ckpt = fixtureCheckpoint();
  const dir = await mkdtemp(join(tmpdir(), 'byom-'));
  folders.push(dir);
  const tokenizer = byteLevelTokenizerFiles();
  const json = (path: string, value: unknown) => writeFile(join(dir, path), JSON.stringify(value, null, 2));
  await json('config.json', { ...qwen2Config(ckpt), ...options.config });
  if (options.generationConfig !== null) {
    await json('generation_config.json', options.generationConfig ?? { eos_token_id: [tokenizer.special.imEnd, tokenizer.special.endOfText] });
  }
  await json('tokenizer.json', tokenizer.tokenizerJson);
  await json('tokenizer_config.json', { ...tokenizer.tokenizerConfig, ...options.tokenizerConfig });
  const graph = buildFixtureGraph(options.graph, options.layout);
  for (const file of options.files ?? ['onnx/model.onnx']) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    if (options.externalDataMaxFileBytes === undefined) {
      await writeFile(join(dir, file), encodeFixtureGraph(graph, options.graph));
      continue;
    }
    const name = file.split('/').pop()!;
    const split = moveWeightsToExternalData(graph, `${name}_data`, { maxFileBytes: options.externalDataMaxFileBytes });
    await writeFile(join(dir, file), encodeFixtureGraph(split.graph, options.graph));
    for (const data of split.files) await writeFile(join(dirname(join(dir, file)), data.name), data.data);
  }
  return dir;
}

/** Removes every folder this process wrote. */
export async function removeFixtureFolders(): Promise<void> {
  await Promise.all(folders.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

/** Greedy continuation of `prompt` by the reference forward pass, and each step's logits. */
export function referenceGreedy(prompt: readonly number[], steps: number): { tokenIds: number[]; logits: Float32Array[] } {
  const reference = new Llama2cReference(fixtureCheckpoint());
  let logits: Float32Array = new Float32Array(0);
  prompt.forEach((token, pos) => (logits = reference.forward(token, pos)));
  const tokenIds: number[] = [];
  const all: Float32Array[] = [];
  for (let step = 0; step < steps; step++) {
    all.push(logits);
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
    tokenIds.push(best);
    if (step + 1 < steps) logits = reference.forward(best, prompt.length + step);
  }
  return { tokenIds, logits: all };
}
