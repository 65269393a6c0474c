/**
 * A llama-family decoder's weights as every graph builder takes them, whatever the file they
 * came from: a llama2.c checkpoint (src/convert/llama2c-checkpoint.ts, the layout these
 * fields were first named after) or a GGUF file of any supported architecture (src/gguf/).
 * Matrices are PyTorch nn.Linear weights, i.e. [out_features, in_features] row-major.
 */

export interface DecoderHeader {
  dim: number;
  hiddenDim: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  vocabSize: number;
  seqLen: number;
  /** The file stores a negative vocab_size when the classifier has its own weights. */
  sharedClassifier: boolean;
}

export interface DecoderLayer {
  rmsAtt: Float32Array; // [dim]
  wq: Float32Array; // [nHeads * headDim, dim] (headDim may differ from dim / nHeads: Qwen3)
  wk: Float32Array; // [kvDim, dim]
  wv: Float32Array; // [kvDim, dim]
  wo: Float32Array; // [dim, nHeads * headDim]
  rmsFfn: Float32Array; // [dim]
  w1: Float32Array; // [hidden, dim]
  w2: Float32Array; // [dim, hidden]
  w3: Float32Array; // [hidden, dim]
  /** q/k/v projection biases (Qwen2 layouts; llama2.c has none), q and k in the rows' order of wq / wk. */
  attentionBias?: { q: Float32Array; k: Float32Array; v: Float32Array };
  /** RMSNorm weights [headDim] over each head of q and of k before RoPE (Qwen3), in the rows' order within a head of wq / wk. */
  qkNorm?: { q: Float32Array; k: Float32Array; epsilon: number };
  /** Mixture of experts in place of w1/w2/w3 (qwen2moe, qwen3moe): the router and each expert's SwiGLU MLP. */
  experts?: MixtureOfExperts;
}

export interface MixtureOfExperts {
  count: number;
  /** Experts each token goes to (top-k of the router's softmax). */
  used: number;
  /** Each expert's MLP width. */
  hidden: number;
  /** Renormalise the top-k probabilities to sum to 1 (Qwen3 MoE; Qwen2 MoE does not). */
  normalize: boolean;
  router: Float32Array; // [count, dim]
  gate: Float32Array; // [count, hidden, dim]
  up: Float32Array; // [count, hidden, dim]
  down: Float32Array; // [count, dim, hidden]
  /** Qwen2 MoE: a dense SwiGLU MLP every token takes, scaled by sigmoid(gateInput · x), added to the routed experts'. */
  shared?: SharedExpert;
}

export interface SharedExpert {
  hidden: number;
  gateInput: Float32Array; // [dim]
  gate: Float32Array; // [hidden, dim]
  up: Float32Array; // [hidden, dim]
  down: Float32Array; // [dim, hidden]
}

export interface DecoderCheckpoint {
  header: DecoderHeader;
  headDim: number;
  kvDim: number;
  tokenEmbedding: Float32Array; // [vocab, dim]
  layers: DecoderLayer[];
  rmsFinal: Float32Array; // [dim]
  freqCisReal: Float32Array; // [seqLen, headDim / 2]
  freqCisImag: Float32Array; // [seqLen, headDim / 2]
  /** Same array as tokenEmbedding when the classifier is shared. */
  classifier: Float32Array; // [vocab, dim]
}
