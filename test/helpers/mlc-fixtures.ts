/**
 * A seeded random-weight MLC model folder for the committed model library
 * (test/fixtures/mlc/, Qwen2-0.5B q4f32_1): what web-llm loads as a model. The library
 * embeds the parameters it binds by name (shapes, dtypes) as a JSON block; the folder
 * gets exactly those, written at test time (~312 MB, never committed), with
 * mlc-chat-config.json, ndarray-cache.json, params_shard_*.bin and a small synthetic
 * byte-level BPE tokenizer (test/helpers/byom-fixtures.ts) under the library's vocabulary.
 *
 * q4f32_1 stores a weight as 4-bit values q (8 per uint32) with one float32 scale per
 * group of 32: w = (q - 7) · scale. Rows of the (tied) embedding get scale 0 except for
 * tokens that spell printable ASCII on their own, so the others' logits are 0 and greedy
 * decoding picks tokens that release text at once (random logits of the ~115 kept rows
 * are all but surely above 0 somewhere): a stream then has one event per token, as the
 * server's has.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { byteLevelTokenizerFiles } from './byom-fixtures.js';
import { REPO_ROOT } from './model.js';

export const MLC_LIBRARY_PATH = join(REPO_ROOT, 'test/fixtures/mlc/Qwen2-0.5B-Instruct-q4f32_1-ctx4k_cs1k-webgpu.wasm');
export const MLC_FIXTURE_SEED = 20261201;
/** Shards of about this size, as MLC's converter writes them. */
const SHARD_BYTES = 32 * 1024 * 1024;
/** Typical init scale: per weight std ≈ 4.6 · scale ≈ 0.02. */
const WEIGHT_SCALE = 0.0045;

export interface MlcParam {
  name: string;
  shape: number[];
  dtype: string;
}

export interface MlcLibraryMetadata {
  model_type: string;
  quantization: string;
  context_window_size: number;
  sliding_window_size: number;
  attention_sink_size: number;
  prefill_chunk_size: number;
  params: MlcParam[];
}

/** The metadata block the library embeds: `{"model_type": …}` after its uint64 length. */
export function mlcLibraryMetadata(library: Uint8Array): MlcLibraryMetadata {
  const marker = new TextEncoder().encode('{"model_type"');
  const at = Buffer.from(library.buffer, library.byteOffset, library.byteLength).indexOf(marker);
  if (at < 8) throw new Error('the model library embeds no metadata block');
  const length = Number(new DataView(library.buffer, library.byteOffset + at - 8, 8).getBigUint64(0, true));
  return JSON.parse(new TextDecoder().decode(library.subarray(at, at + length))) as MlcLibraryMetadata;
}

/** xorshift32: fast and seeded, which is all random weights need. */
function xorshift32(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>>= 0);
  };
}

function elements(shape: readonly number[]): number {
  return shape.reduce((product, size) => product * size, 1);
}

/** One parameter's bytes. `keptRow`: which of the embedding's rows (token ids) get weights. */
function paramBytes(param: MlcParam, next: () => number, keptRow: (id: number) => boolean): Uint8Array {
  const count = elements(param.shape);
  if (param.dtype === 'uint32') {
    const words = new Uint32Array(count);
    for (let i = 0; i < count; i += 1) words[i] = next();
    return new Uint8Array(words.buffer);
  }
  if (param.dtype !== 'float32') throw new Error(`unexpected dtype ${param.dtype} of ${param.name}`);
  const values = new Float32Array(count);
  if (param.name.endsWith('norm.weight')) values.fill(1);
  else if (param.name.endsWith('.bias')) values.fill(0);
  else if (param.name.endsWith('q_scale')) {
    const [rows, groups] = param.shape;
    const embedding = param.name === 'model.embed_tokens.q_scale';
    for (let row = 0; row < rows; row += 1) {
      if (embedding && !keptRow(row)) continue;
      for (let i = row * groups; i < (row + 1) * groups; i += 1) values[i] = WEIGHT_SCALE * (0.5 + next() / 2 ** 32);
    }
  } else {
    for (let i = 0; i < count; i += 1) values[i] = ((next() / 2 ** 32) * 2 - 1) * 0.02;
  }
  return new Uint8Array(values.buffer);
}

export interface MlcFolder {
  /** The folder; web-llm reads it under `<model URL>/resolve/main/`. */
  dir: string;
  vocabulary: number;
  special: { endOfText: number; imStart: number; imEnd: number };
}

/**
 * Writes the folder into `dir` (kept between runs: the same seed writes the same bytes,
 * so a folder already written for it is reused).
 */
export async function writeRandomMlcFolder(dir: string, seed = MLC_FIXTURE_SEED): Promise<MlcFolder> {
  const library = new Uint8Array(await readFile(MLC_LIBRARY_PATH));
  const metadata = mlcLibraryMetadata(library);
  const { tokenizerJson, tokenizerConfig, vocabSize, special } = byteLevelTokenizerFiles();
  const folder = { dir, vocabulary: vocabSize, special };
  const done = join(dir, `.written-${seed}-ascii`);
  if (existsSync(done)) return folder;
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });

  const tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
  const printable = new Set<number>();
  for (let id = 0; id < vocabSize; id += 1) if (/^[\x20-\x7e]+$/.test(tokenizer.decode([id], { skipSpecialTokens: true }))) printable.add(id);
  const next = xorshift32(seed);
  const shards: Array<Record<string, unknown>> = [];
  let records: Array<Record<string, unknown>> = [];
  let chunks: Uint8Array[] = [];
  let offset = 0;
  const flush = async () => {
    if (records.length === 0) return;
    const dataPath = `params_shard_${shards.length}.bin`;
    await writeFile(join(dir, dataPath), Buffer.concat(chunks));
    shards.push({ dataPath, format: 'raw-shard', nbytes: offset, records });
    records = [];
    chunks = [];
    offset = 0;
  };
  let totalBytes = 0;
  for (const param of metadata.params) {
    const bytes = paramBytes(param, next, (id) => printable.has(id));
    if (offset > 0 && offset + bytes.byteLength > SHARD_BYTES) await flush();
    records.push({ name: param.name, shape: param.shape, dtype: param.dtype, format: 'raw', nbytes: bytes.byteLength, byteOffset: offset });
    chunks.push(bytes);
    offset += bytes.byteLength;
    totalBytes += bytes.byteLength;
  }
  await flush();
  const paramCount = metadata.params.reduce((sum, param) => sum + elements(param.shape), 0);
  const ndarrayCache = { metadata: { ParamSize: metadata.params.length, ParamBytes: totalBytes, BitsPerParam: (totalBytes * 8) / paramCount }, records: shards };

  const stopTokenIds = [special.imEnd, special.endOfText];
  const chatConfig = {
    version: '0.1.0',
    model_type: metadata.model_type,
    quantization: metadata.quantization,
    vocab_size: 151936,
    context_window_size: metadata.context_window_size,
    sliding_window_size: metadata.sliding_window_size,
    prefill_chunk_size: metadata.prefill_chunk_size,
    attention_sink_size: metadata.attention_sink_size,
    tensor_parallel_shards: 1,
    temperature: 0.7,
    presence_penalty: 0,
    frequency_penalty: 0,
    repetition_penalty: 1.05,
    top_p: 0.8,
    tokenizer_files: ['tokenizer.json', 'tokenizer_config.json'],
    tokenizer_info: { token_postproc_method: 'byte_level', prepend_space_in_encode: false, strip_space_in_decode: false },
    conv_template: {
      name: 'chatml',
      system_template: '<|im_start|>system\n{system_message}<|im_end|>\n',
      system_message: 'You are a helpful assistant.',
      system_prefix_token_ids: null,
      add_role_after_system_message: true,
      roles: { user: '<|im_start|>user', assistant: '<|im_start|>assistant' },
      role_templates: { user: '{user_message}', assistant: '{assistant_message}', tool: '{tool_message}' },
      messages: [],
      seps: ['<|im_end|>\n'],
      role_content_sep: '\n',
      role_empty_sep: '\n',
      stop_str: ['<|im_end|>'],
      stop_token_ids: stopTokenIds,
      function_string: '',
      use_function_calling: false,
    },
    pad_token_id: special.endOfText,
    bos_token_id: special.endOfText,
    eos_token_id: stopTokenIds,
  };
  await Promise.all([
    writeFile(join(dir, 'ndarray-cache.json'), JSON.stringify(ndarrayCache)),
    writeFile(join(dir, 'mlc-chat-config.json'), JSON.stringify(chatConfig, null, 2)),
    writeFile(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson)),
    writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig, null, 2)),
  ]);
  await writeFile(done, '');
  return folder;
}
