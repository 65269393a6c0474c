/**
 * GGUF files made for llama.cpp's `--embedding` (an encoder such as BERT, or a decoder whose
 * header sets `<arch>.pooling_type`, as convert_hf_to_gguf.py writes it from
 * sentence-transformers' 1_Pooling) are embedding models: served as a generation model they
 * would be served wrong. A decoder one is served for /v1/embeddings
 * (embeddings/gguf-embedding.ts); an encoder one is refused at startup with the reason,
 * naming what serves it here (the model's ONNX export with sentence-transformers' files).
 */
import type { GgufFile } from './gguf-file.js';
import { GgufModelError, meta } from './llama-checkpoint.js';

/** llama.cpp's enum llama_pooling_type, as the header stores it. */
const POOLING_TYPES: Record<number, string> = { 0: 'NONE', 1: 'MEAN', 2: 'CLS', 3: 'LAST', 4: 'RANK' };

/** llama.cpp's encoder architectures (bidirectional attention: embedding and reranking models). */
const ENCODER_ARCHITECTURES = new Set(['bert', 'nomic-bert', 'nomic-bert-moe', 'jina-bert-v2', 'jina-bert-v3', 'modern-bert', 'neo-bert', 'eurobert', 't5encoder']);

const SERVE_INSTEAD =
  'GGUF encoder models are not served by this server yet: serve the model\'s ONNX export with sentence-transformers\' files ' +
  '(MODEL_DIR=<folder> with onnx/model.onnx and modules.json, as onnx-community and Xenova publish them) for /v1/embeddings.';

/** The pooling a decoder's header asks for (`<arch>.pooling_type`), null when it sets none (a generation model). */
export function ggufPoolingType(file: GgufFile): 'MEAN' | 'CLS' | 'LAST' | 'RANK' | null {
  const architecture = meta(file, 'general.architecture');
  if (typeof architecture !== 'string') return null;
  const pooling = meta(file, `${architecture}.pooling_type`);
  if (typeof pooling !== 'number' && typeof pooling !== 'bigint') return null;
  const name = POOLING_TYPES[Number(pooling)];
  if (name === undefined) throw new GgufModelError(`${architecture}.pooling_type is ${pooling}, unknown to llama.cpp's pooling types (0 to 4)`);
  return name === 'NONE' ? null : (name as 'MEAN' | 'CLS' | 'LAST' | 'RANK');
}

/** An encoder GGUF (BERT, ...): refused with the reason. */
export function refuseEncoderGguf(file: GgufFile): void {
  const architecture = meta(file, 'general.architecture');
  if (typeof architecture === 'string' && ENCODER_ARCHITECTURES.has(architecture)) refuseEmbeddingGguf(file);
  if (ggufPoolingType(file) === 'RANK') refuseEmbeddingGguf(file);
}

/** The reason a GGUF is an embedding model, or null for a generation model. */
export function embeddingGgufReason(file: GgufFile): string | null {
  const architecture = meta(file, 'general.architecture');
  if (typeof architecture !== 'string') return null;
  const pooling = meta(file, `${architecture}.pooling_type`);
  const poolingName = typeof pooling === 'number' || typeof pooling === 'bigint' ? (POOLING_TYPES[Number(pooling)] ?? `type ${pooling}`) : null;
  if (ENCODER_ARCHITECTURES.has(architecture)) {
    return `architecture ${architecture} is an encoder, an embedding model${poolingName ? ` (${architecture}.pooling_type ${poolingName})` : ''} that llama.cpp serves with --embedding`;
  }
  if (poolingName === 'RANK') return `its header sets ${architecture}.pooling_type RANK: it is a reranking model that llama.cpp serves with --reranking, not a text generation model`;
  if (poolingName !== null && poolingName !== 'NONE') {
    return `its header sets ${architecture}.pooling_type ${poolingName}: it is an embedding model that llama.cpp serves with --embedding, not a text generation model`;
  }
  return null;
}

/** Opened as a generation model: an embedding GGUF is refused, saying what serves it. */
export function refuseEmbeddingGguf(file: GgufFile): void {
  const reason = embeddingGgufReason(file);
  if (reason === null) return;
  const architecture = meta(file, 'general.architecture');
  const encoder = typeof architecture === 'string' && ENCODER_ARCHITECTURES.has(architecture);
  const instead = encoder || reason.includes('RANK')
    ? SERVE_INSTEAD
    : 'Serve it for /v1/embeddings with --runner pooling (RUNNER=pooling; the default "auto" does so for such a file).';
  throw new GgufModelError(`${reason}. ${instead}`);
}
