/**
 * `phi3` (Phi-3 / Phi-3.5 mini and medium; llama.cpp's src/models/phi3.cpp and
 * conversion/phi.py Phi3MiniModel): the llama decoder with
 * - q, k and v in one attn_qkv matrix [hidden, q dim + 2 kv dim] (rows q | k | v; a file
 *   converted with them apart has attn_q / attn_k / attn_v, which llama.cpp also loads);
 * - gate and up in one ffn_up matrix [hidden, 2 * ffn] (rows gate | up: ggml_swiglu applies
 *   SiLU to the first half, as transformers' Phi3MLP chunks gate_up_proj), no ffn_gate;
 * - NEOX rope (q/k rows in HF rotate-half order, not permuted by the converter);
 * - LongRoPE (Phi-3-mini-128k, Phi-3.5): rope_factors_long / rope_factors_short [rope dims / 2]
 *   divide each pair's frequency, and rope.scaling.attn_factor multiplies cos and sin
 *   (sqrt(1 + ln(context / original) / ln(original)), written by the converter). llama.cpp
 *   picks the factors once per context, not per sequence (llama_model::get_rope_factors): long
 *   when its per-sequence context n_ctx_seq exceeds rope.scaling.original_context_length, else
 *   short, for every position. Here the context is the one this engine serves (its graph's
 *   positions): the same choice llama-server makes with that context per slot.
 *   (transformers instead switches per forward pass on the sequence's own length.)
 * - attention.sliding_window: llama.cpp disables Phi-3's sliding window (it attends over the
 *   whole context) while transformers applies it; the two agree within the window, so the
 *   context served is cut to it. Phi-4 files write 0 (no window).
 */
export const PHI3 = 'phi3';

export interface Phi3LayerDims {
  dim: number;
  qDim: number;
  kvDim: number;
  hiddenDim: number;
}

/** Turns llama's expected tensors of layer `layer` into phi3's: fused q/k/v (unless the file has them apart) and fused gate/up. */
export function phi3LayerTensors(expected: Map<string, number[]>, layer: number, { dim, qDim, kvDim, hiddenDim }: Phi3LayerDims, fusedQkv: boolean): void {
  const p = `blk.${layer}.`;
  if (fusedQkv) {
    for (const part of ['attn_q', 'attn_k', 'attn_v']) expected.delete(`${p}${part}.weight`);
    expected.set(`${p}attn_qkv.weight`, [dim, qDim + 2 * kvDim]);
  }
  expected.delete(`${p}ffn_gate.weight`);
  expected.set(`${p}ffn_up.weight`, [dim, 2 * hiddenDim]);
}

export type LongRope = { kind: 'longrope'; factors: 'long' | 'short'; originalContext: number };

/**
 * LongRoPE when the file has its factor tensors (else null): which factors the served
 * `context` uses, and the two tensors' expected shapes.
 */
export function phi3LongRope(
  has: (tensor: string) => boolean,
  headDim: number,
  context: number,
  originalContext: number,
): { scaling: LongRope; tensors: Array<[string, number[]]> } | null {
  if (!has('rope_factors_long.weight') && !has('rope_factors_short.weight')) return null;
  return {
    scaling: { kind: 'longrope', factors: context > originalContext ? 'long' : 'short', originalContext },
    tensors: [
      ['rope_factors_long.weight', [headDim / 2]],
      ['rope_factors_short.weight', [headDim / 2]],
    ],
  };
}

export const longRopeTensor = (scaling: LongRope) => `rope_factors_${scaling.factors}.weight`;

/** The context phi3 serves: within its sliding window when the file declares one (0: none). */
export function phi3Context(context: number, slidingWindow: number): number {
  return slidingWindow > 0 ? Math.min(context, slidingWindow) : context;
}

/**
 * Row blocks of a fused [sum(rows), cols] matrix as separate matrices, each made when asked:
 * the fused matrix is made once and kept until every block has been taken.
 */
export function fusedRows(whole: () => Float32Array, rows: readonly number[], cols: number): Array<() => Float32Array> {
  let made: Float32Array | null = null;
  const taken = new Set<number>();
  const starts = rows.map((_, i) => rows.slice(0, i).reduce((a, b) => a + b, 0));
  return rows.map((count, i) => () => {
    made ??= whole();
    const block = made.slice(starts[i] * cols, (starts[i] + count) * cols);
    taken.add(i);
    if (taken.size === rows.length) made = null;
    return block;
  });
}

/**
 * llama.cpp (llama-vocab.cpp) gives a vocabulary whose general.name contains "phi-3" or "phi3"
 * (any case) right-stripping special tokens: each control, user-defined or unknown token (and
 * </s>) eats the whitespace after it in a prompt, except <unk>, <s> and <|endoftext|>: what
 * Phi-3's tokenizer.json says with rstrip (so the template's "<|user|>\n" is the token alone).
 * Keyed on the name, not the architecture, as llama.cpp does.
 */
export function phi3RightStrippedTokens(name: string | undefined, tokens: readonly string[], specialIds: readonly number[]): Set<number> {
  const lower = (name ?? '').toLowerCase();
  if (!lower.includes('phi-3') && !lower.includes('phi3')) return new Set();
  const kept = new Set(['<unk>', '<s>', '<|endoftext|>']);
  const ids = [...specialIds, tokens.indexOf('</s>')].filter((id) => id >= 0 && !kept.has(tokens[id]));
  return new Set(ids);
}
