/**
 * Refusals when an adapter does not fit the base or asks for what the engine cannot apply,
 * each naming the tensor or setting; the safetensors reader's dtypes; graph layouts that
 * cannot take adapters.
 */
import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { buildLlamaGraph, EXTRA_OPSETS } from '../../src/graph/llama-onnx-graph.js';
import { rewriteDecoderLayout } from '../../src/graph/graph-variants.js';
import { encodeOnnxModel } from '../../src/graph/onnx-writer.js';
import { buildLoraGraph, type LoraGraphLayout } from '../../src/adapters/lora-graph.js';
import { parsePeftAdapter, type AdapterFiles } from '../../src/adapters/peft-adapter.js';
import { readSafetensors, writeSafetensors } from '../../src/adapters/safetensors.js';
import { modelSpecFromConfig, type ModelSpec } from '../../src/onnx/model-spec.js';
import { COMMITTED_MODEL_DIR, COMMITTED_ONNX, loadSharedCheckpoint } from '../convert/model-paths.js';
import { randomAdapter } from '../helpers/lora-fixtures.js';

let ckpt: DecoderCheckpoint;
let spec: ModelSpec;
let layout: LoraGraphLayout;

beforeAll(async () => {
  ckpt = await loadSharedCheckpoint();
  spec = modelSpecFromConfig(JSON.parse(await readFile(`${COMMITTED_MODEL_DIR}/config.json`, 'utf8')));
  layout = buildLoraGraph(new Uint8Array(await readFile(COMMITTED_ONNX)), spec, { slots: 2, rank: 8, label: 'onnx/model.onnx' }).layout;
});

const parse = (files: AdapterFiles, maxRank = 8) =>
  parsePeftAdapter(files, { name: 'story', path: './adapters/story', layout, numLayers: spec.numLayers, maxRank });

/** A valid adapter with one tensor replaced (or removed, with data null). */
function withTensor(name: string, shape: number[] | null, config: Record<string, unknown> = {}): AdapterFiles {
  const adapter = randomAdapter(ckpt, { seed: 5, rank: 4, alpha: 8, targets: ['q_proj', 'down_proj'], config });
  const tensors = [...readSafetensors(adapter.weights, 'x')]
    .filter(([tensorName]) => tensorName !== name)
    .map(([tensorName, t]) => ({ name: tensorName, dtype: 'F32' as const, shape: t.shape, data: new Uint8Array(t.data.buffer) }));
  if (shape !== null) {
    const count = shape.reduce((a, b) => a * b, 1);
    tensors.push({ name, dtype: 'F32', shape, data: new Uint8Array(new Float32Array(count).buffer) });
  }
  return { config: adapter.config, weights: writeSafetensors(tensors) };
}

describe('PEFT adapter checks against the base', () => {
  it('accepts a valid adapter: modules, ranks and scales', () => {
    const adapter = parse(randomAdapter(ckpt, { seed: 1, rank: 4, alpha: 8, rslora: true, targets: ['q_proj', 'down_proj'] }));
    expect(adapter.modules).toHaveLength(2 * spec.numLayers);
    expect(adapter.rank).toBe(4);
    expect(adapter.modules[0].scale).toBeCloseTo(8 / 2);
  });

  it('refuses a target module the base does not have', () => {
    const files = randomAdapter(ckpt, { seed: 2, rank: 4, alpha: 8, targets: ['q_proj'] });
    (files.config as { target_modules: string[] }).target_modules = ['q_proj', 'c_attn'];
    expect(() => parse(files)).toThrow(/target module "c_attn" is not a projection of the base model \(it has q_proj, k_proj/);
  });

  it('refuses a tensor for a module the base does not have, naming it', () => {
    const name = 'base_model.model.model.layers.0.self_attn.c_attn.lora_A.weight';
    expect(() => parse(withTensor(name, [4, 64]))).toThrow(new RegExp(`tensor "${name.replaceAll('.', '\\.')}" targets "c_attn"`));
  });

  it('refuses a tensor whose shape does not match the base, naming it', () => {
    const name = 'base_model.model.model.layers.2.mlp.down_proj.lora_A.weight';
    expect(() => parse(withTensor(name, [4, 64]))).toThrow(/tensor "base_model\.model\.model\.layers\.2\.mlp\.down_proj\.lora_A\.weight" has shape \[4, 64\], but the base's down_proj takes 172 inputs/);
    const b = 'base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight';
    expect(() => parse(withTensor(b, [32, 4]))).toThrow(/tensor "base_model\.model\.model\.layers\.1\.self_attn\.q_proj\.lora_B\.weight" has shape \[32, 4\], expected \[64, 4\]/);
  });

  it('refuses a layer the base does not have, a lone lora_A, a listed module without tensors', () => {
    expect(() => parse(withTensor('base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight', [4, 64]))).toThrow(/layer 9, but the base model has 5 layers/);
    expect(() => parse(withTensor('base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight', null))).toThrow(/has a lora_A tensor but no lora_B/);
    const files = randomAdapter(ckpt, { seed: 3, rank: 4, alpha: 8, targets: ['q_proj'] });
    (files.config as { target_modules: string[] }).target_modules = ['q_proj', 'v_proj'];
    expect(() => parse(files)).toThrow(/target module "v_proj" is listed in target_modules but adapter_model\.safetensors has no tensor for it/);
  });

  it('refuses ranks above maxLoraRank and what it cannot apply exactly', () => {
    expect(() => parse(randomAdapter(ckpt, { seed: 4, rank: 16, alpha: 8 }))).toThrow(/rank 16, above maxLoraRank 8/);
    expect(() => parse(randomAdapter(ckpt, { seed: 4, rank: 4, alpha: 8, config: { use_dora: true } }))).toThrow(/DoRA/);
    expect(() => parse(randomAdapter(ckpt, { seed: 4, rank: 4, alpha: 8, config: { bias: 'lora_only' } }))).toThrow(/bias is "lora_only"/);
    expect(() => parse(randomAdapter(ckpt, { seed: 4, rank: 4, alpha: 8, config: { modules_to_save: ['lm_head'] } }))).toThrow(/modules_to_save \(lm_head\)/);
    expect(() => parse(randomAdapter(ckpt, { seed: 4, rank: 4, alpha: 8, config: { r: 8 } }))).toThrow(/has rank 4, but adapter_config\.json gives 8/);
  });

  it('takes fan_in_fan_out as PEFT does for linear layers (no effect, said at load)', () => {
    const plain = parse(randomAdapter(ckpt, { seed: 6, rank: 4, alpha: 8 }));
    const flagged = parse(randomAdapter(ckpt, { seed: 6, rank: 4, alpha: 8, fanInFanOut: true }));
    expect(flagged.modules.map((m) => [...m.a.slice(0, 8)])).toEqual(plain.modules.map((m) => [...m.a.slice(0, 8)]));
    expect(flagged.notes.join(' ')).toMatch(/fan_in_fan_out is true/);
  });

  it('honours rank_pattern and alpha_pattern', () => {
    const adapter = randomAdapter(ckpt, { seed: 7, rank: 4, alpha: 8, targets: ['q_proj'], config: { r: 2, rank_pattern: { q_proj: 4 }, alpha_pattern: { 'layers.0.self_attn.q_proj': 2 } } });
    const parsed = parse(adapter);
    expect(parsed.modules.find((m) => m.layer === 0)!.scale).toBeCloseTo(2 / 4);
    expect(parsed.modules.find((m) => m.layer === 1)!.scale).toBeCloseTo(8 / 4);
  });
});

describe('safetensors', () => {
  it('reads F32, F16 and BF16 as float32 and refuses other dtypes by tensor name', () => {
    const f16 = Uint16Array.of(0x3c00, 0xc000, 0x3555); // 1, -2, ~0.3333
    const bf16 = Uint16Array.of(0x3f80, 0xc040); // 1, -3
    const file = writeSafetensors([
      { name: 'a', dtype: 'F32', shape: [2], data: new Uint8Array(Float32Array.of(0.5, -1.25).buffer) },
      { name: 'b', dtype: 'F16', shape: [3], data: new Uint8Array(f16.buffer) },
      { name: 'c', dtype: 'BF16', shape: [1, 2], data: new Uint8Array(bf16.buffer) },
    ]);
    const tensors = readSafetensors(file, 'test');
    expect([...tensors.get('a')!.data]).toEqual([0.5, -1.25]);
    expect(tensors.get('b')!.data[0]).toBe(1);
    expect(tensors.get('b')!.data[1]).toBe(-2);
    expect(tensors.get('b')!.data[2]).toBeCloseTo(1 / 3, 3);
    expect([...tensors.get('c')!.data]).toEqual([1, -3]);
    expect(tensors.get('c')!.shape).toEqual([1, 2]);

    const header = new TextEncoder().encode(JSON.stringify({ w: { dtype: 'I8', shape: [2], data_offsets: [0, 2] } }));
    const bad = new Uint8Array(8 + header.length + 2);
    new DataView(bad.buffer).setBigUint64(0, BigInt(header.length), true);
    bad.set(header, 8);
    expect(() => readSafetensors(bad, 'adapter_model.safetensors')).toThrow(/tensor "w" is I8/);
    expect(() => readSafetensors(new Uint8Array(4), 'f')).toThrow(/too short/);
  });
});

describe('graph layouts', () => {
  const encode = (graph: Parameters<typeof encodeOnnxModel>[0]['graph'], ops: 'fused' | 'portable' | 'gqa') =>
    encodeOnnxModel({ irVersion: 8, opsetVersion: 17, producerName: 'edge-llm-test', producerVersion: '0', graph, extraOpsets: EXTRA_OPSETS[ops] });

  it('refuses the portable flavour and dynamic int8 graphs by name', () => {
    const portable = encode(buildLlamaGraph(ckpt, { rmsNormEps: 1e-5, ops: 'portable' }), 'portable');
    expect(() => buildLoraGraph(portable, spec, { slots: 1, rank: 4, label: 'portable.onnx' })).toThrow(/portable\.onnx cannot take LoRA adapters: .*qkv_rotary_proj/);
    const int8 = encode(rewriteDecoderLayout(buildLlamaGraph(ckpt, { rmsNormEps: 1e-5, ops: 'fused' }), { dynamicInt8: true }), 'fused');
    expect(() => buildLoraGraph(int8, spec, { slots: 1, rank: 4, label: 'model_int8.onnx' })).toThrow(/model_int8\.onnx cannot take LoRA adapters: it has no float32 projection/);
  });

  it('finds q|k and v projections in the gqa flavour', () => {
    const gqa = encode(buildLlamaGraph(ckpt, { rmsNormEps: 1e-5, ops: 'gqa' }), 'gqa');
    const { layout: gqaLayout } = buildLoraGraph(gqa, spec, { slots: 1, rank: 4, label: 'gqa' });
    expect([...gqaLayout.modules].sort()).toEqual(['down_proj', 'gate_proj', 'k_proj', 'o_proj', 'q_proj', 'up_proj', 'v_proj']);
  });
});
