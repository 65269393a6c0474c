/**
 * Seeded random PEFT LoRA adapters for a llama2.c checkpoint's shapes (the embedded model's),
 * written as PEFT writes them: adapter_config.json + adapter_model.safetensors with
 * "base_model.model.model.layers.N.<block>.<module>.lora_A/B.weight" tensors in float32,
 * float16 or bfloat16. The tests build theirs with it; scripts/make-example-adapter.ts
 * writes the committed example adapters/story.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { writeSafetensors } from '../../src/adapters/safetensors.js';
import { seededRandom } from '../seeded-random.js';

export const ALL_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraModuleName = (typeof ALL_MODULES)[number];

export interface RandomAdapterOptions {
  seed: number;
  rank: number;
  alpha: number;
  rslora?: boolean;
  dtype?: 'F32' | 'F16' | 'BF16';
  targets?: readonly string[];
  fanInFanOut?: boolean;
  /** Values are uniform in ±magnitude (A and B alike). */
  magnitude?: number;
  /** Extra adapter_config.json fields (or overrides). */
  config?: Record<string, unknown>;
}

export interface RandomAdapter {
  config: Record<string, unknown>;
  weights: Uint8Array;
  /** The values as stored (after rounding to the dtype), nn.Linear layout: A [r, in], B [out, r]. */
  modules: Array<{ layer: number; module: string; a: Float32Array; b: Float32Array; inDim: number; outDim: number }>;
  scale: number;
}

function float32ToFloat16Bits(value: number): number {
  const f = new Float32Array([value]);
  const x = new Uint32Array(f.buffer)[0];
  const sign = (x >>> 16) & 0x8000;
  const exponent = ((x >>> 23) & 0xff) - 127 + 15;
  let mantissa = x & 0x7fffff;
  if (exponent <= 0) {
    if (exponent < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - exponent;
    return sign | ((mantissa + (1 << (shift - 1))) >> shift);
  }
  if (exponent >= 31) return sign | 0x7c00;
  const rounded = mantissa + 0x1000;
  if (rounded & 0x800000) return exponent + 1 >= 31 ? sign | 0x7c00 : sign | ((exponent + 1) << 10);
  return sign | (exponent << 10) | (rounded >> 13);
}

function float16BitsToFloat32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/** The stored bytes of `values` in `dtype`, and the values they decode to. */
function encode(values: Float32Array, dtype: 'F32' | 'F16' | 'BF16'): { bytes: Uint8Array; decoded: Float32Array } {
  if (dtype === 'F32') return { bytes: new Uint8Array(values.slice().buffer), decoded: values };
  const halves = new Uint16Array(values.length);
  const decoded = new Float32Array(values.length);
  const words = new Uint32Array(values.buffer.slice(0));
  for (let i = 0; i < values.length; i++) {
    if (dtype === 'F16') {
      halves[i] = float32ToFloat16Bits(values[i]);
      decoded[i] = float16BitsToFloat32(halves[i]);
    } else {
      halves[i] = (words[i] + 0x8000) >>> 16; // round to nearest
      decoded[i] = new Float32Array(new Uint32Array([halves[i] << 16]).buffer)[0];
    }
  }
  return { bytes: new Uint8Array(halves.buffer), decoded };
}

/** in / out features of each module for a checkpoint's shapes. */
export function moduleShapes(ckpt: DecoderCheckpoint): Record<LoraModuleName, { inDim: number; outDim: number }> {
  const { dim, hiddenDim } = ckpt.header;
  const { kvDim } = ckpt;
  return {
    q_proj: { inDim: dim, outDim: dim },
    k_proj: { inDim: dim, outDim: kvDim },
    v_proj: { inDim: dim, outDim: kvDim },
    o_proj: { inDim: dim, outDim: dim },
    gate_proj: { inDim: dim, outDim: hiddenDim },
    up_proj: { inDim: dim, outDim: hiddenDim },
    down_proj: { inDim: hiddenDim, outDim: dim },
  };
}

const BLOCK: Record<string, string> = { q_proj: 'self_attn', k_proj: 'self_attn', v_proj: 'self_attn', o_proj: 'self_attn', gate_proj: 'mlp', up_proj: 'mlp', down_proj: 'mlp' };

export function randomAdapter(ckpt: DecoderCheckpoint, options: RandomAdapterOptions): RandomAdapter {
  const random = seededRandom(options.seed);
  const dtype = options.dtype ?? 'F32';
  const targets = options.targets ?? ALL_MODULES;
  const magnitude = options.magnitude ?? 0.3;
  const shapes = moduleShapes(ckpt);
  const tensors: Array<{ name: string; dtype: 'F32' | 'F16' | 'BF16'; shape: number[]; data: Uint8Array }> = [];
  const modules: RandomAdapter['modules'] = [];
  const values = (count: number) => Float32Array.from({ length: count }, () => (random() * 2 - 1) * magnitude);
  for (let layer = 0; layer < ckpt.header.nLayers; layer++) {
    for (const module of targets) {
      const { inDim, outDim } = shapes[module as LoraModuleName] ?? { inDim: ckpt.header.dim, outDim: ckpt.header.dim };
      const prefix = `base_model.model.model.layers.${layer}.${BLOCK[module] ?? 'self_attn'}.${module}`;
      const a = encode(values(options.rank * inDim), dtype);
      const b = encode(values(outDim * options.rank), dtype);
      tensors.push({ name: `${prefix}.lora_A.weight`, dtype, shape: [options.rank, inDim], data: a.bytes });
      tensors.push({ name: `${prefix}.lora_B.weight`, dtype, shape: [outDim, options.rank], data: b.bytes });
      modules.push({ layer, module, a: a.decoded, b: b.decoded, inDim, outDim });
    }
  }
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: 'stories260k',
    r: options.rank,
    lora_alpha: options.alpha,
    lora_dropout: 0,
    target_modules: [...targets],
    use_rslora: options.rslora ?? false,
    fan_in_fan_out: options.fanInFanOut ?? false,
    bias: 'none',
    modules_to_save: null,
    inference_mode: true,
    ...options.config,
  };
  const scale = options.rslora ? options.alpha / Math.sqrt(options.rank) : options.alpha / options.rank;
  return { config, weights: writeSafetensors(tensors, { format: 'pt' }), modules, scale };
}

export async function writeAdapterDir(dir: string, adapter: Pick<RandomAdapter, 'config' | 'weights'>): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'adapter_config.json'), `${JSON.stringify(adapter.config, null, 2)}\n`);
  await writeFile(join(dir, 'adapter_model.safetensors'), adapter.weights);
  return dir;
}

