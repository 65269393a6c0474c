/**
 * Reader for llama2.c "legacy" checkpoints (the format of karpathy/tinyllamas): a 7-int32
 * header followed by float32 tensors in a fixed order, into the graph builder's
 * DecoderCheckpoint.
 */
import type { DecoderCheckpoint, DecoderHeader } from '../graph/decoder-checkpoint.js';

const HEADER_BYTES = 7 * 4;

export function readLlama2cCheckpoint(bytes: Uint8Array): DecoderCheckpoint {
  if (bytes.byteLength < HEADER_BYTES) {
    throw new Error(`llama2.c checkpoint too short for its header: ${bytes.byteLength} bytes`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const h = (i: number) => view.getInt32(i * 4, true);
  const rawVocab = h(5);
  const header: DecoderHeader = {
    dim: h(0),
    hiddenDim: h(1),
    nLayers: h(2),
    nHeads: h(3),
    nKvHeads: h(4),
    vocabSize: Math.abs(rawVocab),
    seqLen: h(6),
    sharedClassifier: rawVocab > 0,
  };
  validateHeader(header);
  const { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize, seqLen } = header;
  const headDim = dim / nHeads;
  const kvDim = headDim * nKvHeads;

  const floatCount = (bytes.byteLength - HEADER_BYTES) / 4;
  // Copy once so every tensor is a 4-byte-aligned view regardless of the caller's buffer.
  const floats = new Float32Array(floatCount);
  for (let i = 0; i < floatCount; i++) floats[i] = view.getFloat32(HEADER_BYTES + i * 4, true);

  let offset = 0;
  const take = (count: number, what: string): Float32Array => {
    if (offset + count > floats.length) {
      throw new Error(`llama2.c checkpoint truncated while reading ${what}`);
    }
    const t = floats.subarray(offset, offset + count);
    offset += count;
    return t;
  };
  // The file groups each tensor kind across all layers, so read per kind, then split per layer.
  const perLayer = (count: number, what: string) => {
    const all = take(count * nLayers, what);
    return Array.from({ length: nLayers }, (_, l) => all.subarray(l * count, (l + 1) * count));
  };

  const tokenEmbedding = take(vocabSize * dim, 'token_embedding');
  const rmsAtt = perLayer(dim, 'rms_att');
  const wq = perLayer(dim * dim, 'wq');
  const wk = perLayer(kvDim * dim, 'wk');
  const wv = perLayer(kvDim * dim, 'wv');
  const wo = perLayer(dim * dim, 'wo');
  const rmsFfn = perLayer(dim, 'rms_ffn');
  const w1 = perLayer(hiddenDim * dim, 'w1');
  const w2 = perLayer(dim * hiddenDim, 'w2');
  const w3 = perLayer(hiddenDim * dim, 'w3');
  const rmsFinal = take(dim, 'rms_final');
  const freqCisReal = take((seqLen * headDim) / 2, 'freq_cis_real');
  const freqCisImag = take((seqLen * headDim) / 2, 'freq_cis_imag');
  const classifier = header.sharedClassifier ? tokenEmbedding : take(vocabSize * dim, 'wcls');
  if (offset !== floats.length) {
    throw new Error(
      `llama2.c checkpoint has ${floats.length - offset} unexpected trailing floats ` +
        `(header says dim ${dim}, layers ${nLayers}, vocab ${vocabSize})`,
    );
  }

  const layers = rmsAtt.map((_, l) => ({
    rmsAtt: rmsAtt[l],
    wq: wq[l],
    wk: wk[l],
    wv: wv[l],
    wo: wo[l],
    rmsFfn: rmsFfn[l],
    w1: w1[l],
    w2: w2[l],
    w3: w3[l],
  }));
  return {
    header,
    headDim,
    kvDim,
    tokenEmbedding,
    layers,
    rmsFinal,
    freqCisReal,
    freqCisImag,
    classifier,
  };
}

function validateHeader(h: DecoderHeader): void {
  const fields = [h.dim, h.hiddenDim, h.nLayers, h.nHeads, h.nKvHeads, h.vocabSize, h.seqLen];
  if (fields.some((v) => !Number.isInteger(v) || v <= 0 || v > 1 << 24)) {
    throw new Error(`not a llama2.c checkpoint: implausible header ${JSON.stringify(h)}`);
  }
  if (h.dim % h.nHeads !== 0 || (h.dim / h.nHeads) % 2 !== 0) {
    throw new Error(`dim ${h.dim} is not n_heads ${h.nHeads} times an even head size`);
  }
  if (h.nHeads % h.nKvHeads !== 0) {
    throw new Error(`n_heads ${h.nHeads} is not a multiple of n_kv_heads ${h.nKvHeads}`);
  }
}
