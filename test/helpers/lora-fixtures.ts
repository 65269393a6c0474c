/**
 * The oracle for LoRA tests: the seeded random adapters of scripts/adapters/random-peft-adapter.ts
 * merged into the checkpoint (W + scale·B·A in Hugging Face's row order), for the llama2.c reference.
 */
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { hfRowSource } from '../../src/graph/rope.js';
import type { LoraModuleName, RandomAdapter } from '../../scripts/adapters/random-peft-adapter.js';

export { ALL_MODULES, moduleShapes, randomAdapter, writeAdapterDir } from '../../scripts/adapters/random-peft-adapter.js';
export type { RandomAdapter, RandomAdapterOptions } from '../../scripts/adapters/random-peft-adapter.js';

/**
 * The checkpoint with the adapter merged in: W_hf + scale·B·A, where q and k rows are in HF
 * order (the adapter was trained on the HF model), mapped back to llama2.c's row order.
 */
export function mergeAdapter(ckpt: DecoderCheckpoint, adapter: RandomAdapter): DecoderCheckpoint {
  const { nHeads, nKvHeads } = ckpt.header;
  const layers = ckpt.layers.map((layer) => ({ ...layer, wq: layer.wq.slice(), wk: layer.wk.slice(), wv: layer.wv.slice(), wo: layer.wo.slice(), w1: layer.w1.slice(), w2: layer.w2.slice(), w3: layer.w3.slice() }));
  const field = { q_proj: 'wq', k_proj: 'wk', v_proj: 'wv', o_proj: 'wo', gate_proj: 'w1', up_proj: 'w3', down_proj: 'w2' } as const;
  for (const { layer, module, a, b, inDim, outDim } of adapter.modules) {
    const rank = a.length / inDim;
    const w = layers[layer][field[module as LoraModuleName]];
    const heads = module === 'q_proj' ? nHeads : module === 'k_proj' ? nKvHeads : 0;
    for (let rowHf = 0; rowHf < outDim; rowHf++) {
      const row = heads > 0 ? Math.floor(rowHf / ckpt.headDim) * ckpt.headDim + hfRowSource(rowHf % ckpt.headDim, ckpt.headDim) : rowHf;
      for (let col = 0; col < inDim; col++) {
        let sum = 0;
        for (let j = 0; j < rank; j++) sum += b[rowHf * rank + j] * a[j * inDim + col];
        w[row * inDim + col] += adapter.scale * sum;
      }
    }
  }
  return { ...ckpt, layers };
}
