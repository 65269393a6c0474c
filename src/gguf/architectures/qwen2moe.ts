/**
 * `qwen2moe` (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B; llama.cpp's src/models/qwen2moe.cpp,
 * transformers' Qwen2MoeSparseMoeBlock): qwen2's attention (q/k/v biases, NEOX rope) and, in
 * place of the MLP, qwen3moe.ts's routed experts — softmax over every expert, top
 * expert_used_count, NOT renormalised (llama.cpp's build_moe_ffn norm_w false, whatever the
 * transformers config's norm_topk_prob said) — plus a shared expert: a SwiGLU MLP of its own
 * width (expert_shared_feed_forward_length, else feed_forward_length as llama.cpp falls back)
 * whose output is scaled by sigmoid(ffn_gate_inp_shexp · x) and added to the routed experts'.
 * Every layer sparse (llama.cpp loads no other layout).
 */
import type { SharedExpert } from '../../graph/decoder-checkpoint.js';
import { positiveCount, routedExperts, type ExpertsShape } from './qwen3moe.js';

export const QWEN2MOE = 'qwen2moe';

export type Qwen2moeShape = ExpertsShape & { sharedHidden: number };

export function qwen2moeExperts(number: (key: string) => number, has: (key: string) => boolean): Qwen2moeShape {
  const sharedKey = `${QWEN2MOE}.expert_shared_feed_forward_length`;
  const sharedHidden = positiveCount(number, has(sharedKey) ? sharedKey : `${QWEN2MOE}.feed_forward_length`);
  return { ...routedExperts(QWEN2MOE, number, false), sharedHidden };
}

/** The shared expert's tensors and their GGUF dims; the converter writes the gate's input as [dim, 1] (llama.cpp reads [dim]). */
export function qwen2moeSharedTensors(layer: number, dim: number, sharedHidden: number, gateInputDims: number[] | undefined): Array<[string, number[]]> {
  const p = `blk.${layer}.`;
  return [
    [`${p}ffn_gate_inp_shexp.weight`, gateInputDims?.join(',') === `${dim},1` ? [dim, 1] : [dim]],
    [`${p}ffn_gate_shexp.weight`, [dim, sharedHidden]],
    [`${p}ffn_up_shexp.weight`, [dim, sharedHidden]],
    [`${p}ffn_down_shexp.weight`, [sharedHidden, dim]],
  ];
}

/** A layer's shared expert, each matrix made float32 (or its block factors) when the graph builder reads it. */
export async function readQwen2moeSharedExpert(
  matrix: (name: string) => Promise<() => Float32Array>,
  layerPrefix: string,
  hidden: number,
): Promise<SharedExpert> {
  const [gateInput, gate, up, down] = await Promise.all(['ffn_gate_inp_shexp', 'ffn_gate_shexp', 'ffn_up_shexp', 'ffn_down_shexp'].map((part) => matrix(`${layerPrefix}${part}.weight`)));
  return {
    hidden,
    get gateInput() { return gateInput(); },
    get gate() { return gate(); },
    get up() { return up(); },
    get down() { return down(); },
  };
}
