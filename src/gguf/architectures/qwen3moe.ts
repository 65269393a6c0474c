/**
 * `qwen3moe` (Qwen3 MoE: Qwen3-30B-A3B and kin; llama.cpp's src/models/qwen3moe.cpp): qwen3's
 * attention (q/k head norms, NEOX rope, head size from key_length) and, in place of the MLP,
 * a router (ffn_gate_inp [hidden, experts]) choosing expert_used_count of expert_count SwiGLU
 * experts of expert_feed_forward_length (ffn_gate_exps / ffn_up_exps [hidden, ffn, experts],
 * ffn_down_exps [ffn, hidden, experts]), weighted by the router's softmax renormalised over
 * the chosen ones (llama.cpp's build_moe_ffn with norm_w true for qwen3moe, whatever the
 * transformers config's norm_topk_prob was). The graph runs them in onnxruntime's MoE kernel.
 * No shared expert (qwen2moe.ts adds one to these routed experts).
 * Kept import-free of llama-checkpoint.ts, which imports this file.
 */
import type { MixtureOfExperts, SharedExpert } from '../../graph/decoder-checkpoint.js';

export const QWEN3MOE = 'qwen3moe';

export type ExpertsShape = Pick<MixtureOfExperts, 'count' | 'used' | 'hidden' | 'normalize'>;

/** A positive integer count from the file's metadata (`number` reads a key, throwing when absent). */
export function positiveCount(number: (key: string) => number, key: string): number {
  const value = number(key);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${key} is ${value}: not a positive count`);
  return value;
}

/**
 * The routed experts' sizes from the file's metadata. `normalize` is the architecture's, as
 * llama.cpp hard-codes it (qwen3moe renormalises the top-k weights, qwen2moe does not).
 */
export function routedExperts(architecture: string, number: (key: string) => number, normalize: boolean): ExpertsShape {
  const count = positiveCount(number, `${architecture}.expert_count`);
  const used = positiveCount(number, `${architecture}.expert_used_count`);
  const hidden = positiveCount(number, `${architecture}.expert_feed_forward_length`);
  if (used > count) throw new Error(`${architecture}.expert_used_count ${used} exceeds expert_count ${count}`);
  return { count, used, hidden, normalize };
}

export const qwen3moeExperts = (number: (key: string) => number): ExpertsShape => routedExperts(QWEN3MOE, number, true);

/** The per-layer expert tensors and their GGUF dims (ggml order: innermost first). */
export function routedExpertTensors(layer: number, dim: number, { count, hidden }: ExpertsShape): Array<[string, number[]]> {
  const p = `blk.${layer}.`;
  return [
    [`${p}ffn_gate_inp.weight`, [dim, count]],
    [`${p}ffn_gate_exps.weight`, [dim, hidden, count]],
    [`${p}ffn_up_exps.weight`, [dim, hidden, count]],
    [`${p}ffn_down_exps.weight`, [hidden, dim, count]],
  ];
}

/** A layer's experts: each tensor's rows as the graph wants them (expert-major, nn.Linear [out, in] within one). */
export async function readRoutedExperts(
  matrix: (name: string) => Promise<() => Float32Array>,
  layerPrefix: string,
  shape: ExpertsShape,
  shared?: SharedExpert,
): Promise<MixtureOfExperts> {
  const [router, gate, up, down] = await Promise.all(['ffn_gate_inp', 'ffn_gate_exps', 'ffn_up_exps', 'ffn_down_exps'].map((part) => matrix(`${layerPrefix}${part}.weight`)));
  return {
    ...shape,
    get router() { return router(); },
    get gate() { return gate(); },
    get up() { return up(); },
    get down() { return down(); },
    ...(shared ? { shared } : {}),
  };
}
