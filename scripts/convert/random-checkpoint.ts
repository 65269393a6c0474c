/**
 * A seeded random-weight llama2.c checkpoint of any shape: the tests' fixtures, the bench's
 * 135M-shaped model and the thread measurements all build theirs here, so one seed gives
 * one set of weights wherever it is used.
 */
import type { DecoderCheckpoint, DecoderHeader } from '../../src/graph/decoder-checkpoint.js';
import { seededRandom } from '../seeded-random.js';

/** A llama2.c header's sizes; whether the classifier is shared is `tiedClassifier`. */
export interface RandomCheckpointShape extends Omit<DecoderHeader, 'sharedClassifier'> {
  /** RoPE base (10000 unless the shape's family says otherwise). */
  ropeTheta?: number;
  /**
   * The output projection is the token embedding (SmolLM2's tie_word_embeddings). Untied,
   * the model gets its own: with tied embeddings a random model mostly repeats its input.
   */
  tiedClassifier?: boolean;
}

export function randomLlamaCheckpoint(shape: RandomCheckpointShape, seed: number): DecoderCheckpoint {
  const { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize, seqLen, ropeTheta = 10000, tiedClassifier = false } = shape;
  const random = seededRandom(seed);
  const headDim = dim / nHeads;
  const kvDim = headDim * nKvHeads;
  const uniform = (count: number, scale: number) => {
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = (random() * 2 - 1) * scale;
    return out;
  };
  const norm = (count: number) => Float32Array.from({ length: count }, () => 0.8 + 0.4 * random());
  // Unit-variance outputs for unit-variance inputs, as an initialiser would give.
  const linear = (out: number, inn: number) => uniform(out * inn, Math.sqrt(3 / inn));
  const tokenEmbedding = uniform(vocabSize * dim, 1);
  const classifier = tiedClassifier ? tokenEmbedding : uniform(vocabSize * dim, 1);
  const half = headDim / 2;
  const freqCisReal = new Float32Array(seqLen * half);
  const freqCisImag = new Float32Array(seqLen * half);
  for (let pos = 0; pos < seqLen; pos++) {
    for (let i = 0; i < half; i++) {
      const angle = pos / ropeTheta ** ((2 * i) / headDim);
      freqCisReal[pos * half + i] = Math.cos(angle);
      freqCisImag[pos * half + i] = Math.sin(angle);
    }
  }
  const layers = Array.from({ length: nLayers }, () => ({
    rmsAtt: norm(dim),
    wq: linear(dim, dim),
    wk: linear(kvDim, dim),
    wv: linear(kvDim, dim),
    wo: linear(dim, dim),
    rmsFfn: norm(dim),
    w1: linear(hiddenDim, dim),
    w2: linear(dim, hiddenDim),
    w3: linear(hiddenDim, dim),
  }));
  return {
    header: { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize, seqLen, sharedClassifier: tiedClassifier },
    headDim,
    kvDim,
    tokenEmbedding,
    layers,
    rmsFinal: norm(dim),
    freqCisReal,
    freqCisImag,
    classifier,
  };
}
