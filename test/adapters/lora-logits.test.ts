/**
 * Seeded random PEFT adapters on the embedded model: the LoRA graph's logits with an adapter
 * equal the llama2.c reference's logits for the checkpoint with the adapter merged in
 * (W + scale·B·A, rsLoRA's scale included), for float32, float16 and bfloat16 files and for
 * fan_in_fan_out; several adapters in one batch give each row its own result.
 */
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { buildLoraGraph, type LoraGraphLayout } from '../../src/adapters/lora-graph.js';
import { LoraRegistry } from '../../src/adapters/lora-registry.js';
import { LoraSlots } from '../../src/adapters/lora-slots.js';
import type { AdapterFiles } from '../../src/adapters/peft-adapter.js';
import { emptyKvCache } from '../../src/engine/kv/kv-cache.js';
import { modelSpecFromFiles, type ModelSpec } from '../../src/onnx/model-spec.js';
import { OnnxDecoder } from '../../src/engine/onnx-decoder.js';
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import { readModelDir } from '../../src/runtime/node/model-dir.js';
import { Llama2cReference } from '../convert/llama2c-reference.js';
import { loadSharedCheckpoint } from '../convert/model-paths.js';
import { MODEL_DIR } from '../helpers/model.js';
import { mergeAdapter, randomAdapter, type RandomAdapter, type RandomAdapterOptions } from '../helpers/lora-fixtures.js';

const PROMPT = [1, 403, 407, 261, 378, 289, 260, 1092 % 512, 77];
const TOLERANCE = 2e-4;

let ckpt: DecoderCheckpoint;
let spec: ModelSpec;
let decoder: OnnxDecoder;
let slots: LoraSlots;
let layout: LoraGraphLayout;
const stored = new Map<string, AdapterFiles>();
let registry: LoraRegistry;

beforeAll(async () => {
  ckpt = await loadSharedCheckpoint();
  const files = await readModelDir(MODEL_DIR);
  spec = modelSpecFromFiles(files).spec;
  decoder = await OnnxDecoder.create(ort as unknown as OrtRuntime, files.onnx, spec);
  const built = buildLoraGraph(files.onnx, spec, { slots: 3, rank: 16, label: 'onnx/model.onnx' });
  layout = built.layout;
  slots = new LoraSlots(layout);
  await decoder.attachLora(built.model, slots);
  registry = new LoraRegistry(layout, spec.numLayers, 16, async (path) => stored.get(path)!, new Set(['stories260k']));
});

async function load(name: string, options: RandomAdapterOptions): Promise<RandomAdapter> {
  const adapter = randomAdapter(ckpt, options);
  stored.set(`mem:${name}`, adapter);
  await registry.load(name, `mem:${name}`);
  return adapter;
}

/** Logits of every prompt position for each row, rows fed together in one call. */
async function batchLogits(rows: Array<{ tokens: number[]; slot: number }>): Promise<Float32Array[]> {
  const seqLen = rows[0].tokens.length;
  const batch = rows.length;
  const { logits } = await decoder.run({
    batch,
    seqLen,
    inputIds: BigInt64Array.from(rows.flatMap((row) => row.tokens), BigInt),
    positionIds: BigInt64Array.from(rows.flatMap(() => Array.from({ length: seqLen }, (_, i) => BigInt(i)))),
    attentionMask: new BigInt64Array(batch * seqLen).fill(1n),
    past: emptyKvCache(spec.numLayers, batch, spec.numKeyValueHeads, spec.headDim),
    loraSlots: rows.map((row) => row.slot),
  });
  const vocab = spec.vocabSize;
  return rows.map((_, row) => logits.slice(row * seqLen * vocab, (row + 1) * seqLen * vocab));
}

function expectLogitsClose(actual: Float32Array, expected: Float32Array[]): void {
  const vocab = spec.vocabSize;
  let worst = 0;
  expected.forEach((position, p) => {
    for (let i = 0; i < vocab; i++) worst = Math.max(worst, Math.abs(actual[p * vocab + i] - position[i]));
  });
  expect(worst).toBeLessThan(TOLERANCE);
}

function argmaxRows(logits: Float32Array): number[] {
  const vocab = spec.vocabSize;
  const out: number[] = [];
  for (let p = 0; p < logits.length / vocab; p++) {
    let best = 0;
    for (let i = 1; i < vocab; i++) if (logits[p * vocab + i] > logits[p * vocab + best]) best = i;
    out.push(best);
  }
  return out;
}

describe('LoRA graph logits vs the merged checkpoint (llama2.c reference)', () => {
  const cases: Array<[string, RandomAdapterOptions]> = [
    ['float32, every projection', { seed: 11, rank: 8, alpha: 16 }],
    ['float16, rsLoRA, q/v/down only', { seed: 12, rank: 4, alpha: 8, rslora: true, dtype: 'F16', targets: ['q_proj', 'v_proj', 'down_proj'] }],
    ['bfloat16, fan_in_fan_out, rank 16', { seed: 13, rank: 16, alpha: 4, dtype: 'BF16', fanInFanOut: true, targets: ['k_proj', 'o_proj', 'gate_proj', 'up_proj'] }],
  ];
  for (const [label, options] of cases) {
    it(label, async () => {
      const adapter = await load(`case-${options.seed}`, options);
      const slot = slots.acquire(registry.get(`case-${options.seed}`)!, new Set())!;
      const [withAdapter] = await batchLogits([{ tokens: PROMPT, slot }]);
      const merged = Llama2cReference.prefill(mergeAdapter(ckpt, adapter), PROMPT);
      expectLogitsClose(withAdapter, merged);
      expect(argmaxRows(withAdapter)).toEqual(merged.map((row) => argmaxRows(row)[0]));
      // The adapter matters: the base model's logits are far from these.
      const base = Llama2cReference.prefill(ckpt, PROMPT);
      const gap = Math.max(...base.map((row, p) => Math.max(...row.map((v, i) => Math.abs(v - withAdapter[p * spec.vocabSize + i])))));
      expect(gap).toBeGreaterThan(0.05);
    });
  }

  it('a batch mixing base, adapter 1 and adapter 2 rows equals each row run alone', async () => {
    const one = await load('mix-1', { seed: 21, rank: 8, alpha: 16 });
    const two = await load('mix-2', { seed: 22, rank: 2, alpha: 4, rslora: true, dtype: 'F16' });
    const slotOne = slots.acquire(registry.get('mix-1')!, new Set())!;
    const slotTwo = slots.acquire(registry.get('mix-2')!, new Set([registry.get('mix-1')!]))!;
    expect(slotOne).not.toBe(slotTwo);
    const other = [1, 320, 261, 450, 300, 290, 270, 280, 275];
    const rows = [
      { tokens: PROMPT, slot: -1 },
      { tokens: PROMPT, slot: slotOne },
      { tokens: other, slot: slotTwo },
      { tokens: other, slot: slotOne },
    ];
    const batched = await batchLogits(rows);
    for (let i = 0; i < rows.length; i++) {
      const [alone] = await batchLogits([rows[i]]);
      let worst = 0;
      for (let j = 0; j < alone.length; j++) worst = Math.max(worst, Math.abs(alone[j] - batched[i][j]));
      expect(worst).toBeLessThan(1e-5);
    }
    expectLogitsClose(batched[0], Llama2cReference.prefill(ckpt, PROMPT));
    expectLogitsClose(batched[1], Llama2cReference.prefill(mergeAdapter(ckpt, one), PROMPT));
    expectLogitsClose(batched[2], Llama2cReference.prefill(mergeAdapter(ckpt, two), other));
    expectLogitsClose(batched[3], Llama2cReference.prefill(mergeAdapter(ckpt, one), other));
  });
});
