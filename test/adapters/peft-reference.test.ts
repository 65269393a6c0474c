/**
 * LoRA adapters made and saved by PEFT itself (scripts/adapters/build_peft_references.py:
 * LoraConfig + get_peft_model on transformers' LlamaForCausalLM holding the embedded model's
 * weights, save_pretrained), checked over HTTP against PEFT's own greedy output and the
 * merged model's (merge_and_unload): PEFT's default targets for Llama (q_proj + v_proj), every
 * subset of the fused q/k/v and gate/up projections, o/down, `all-linear`, a regex,
 * rank_pattern / alpha_pattern, rsLoRA, layers_to_transform; alone and all together in one
 * batch with base requests, on the native and the WebAssembly backend and the worker thread. DoRA, modules_to_save and other PEFT types are refused by name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { buildLoraGraph } from '../../src/adapters/lora-graph.js';
import { LoraRegistry } from '../../src/adapters/lora-registry.js';
import { LoraSlots } from '../../src/adapters/lora-slots.js';
import { nodeLoraOptions, readAdapterDir } from '../../src/runtime/node/adapters.js';
import { emptyKvCache } from '../../src/engine/kv/kv-cache.js';
import { modelSpecFromFiles } from '../../src/onnx/model-spec.js';
import { OnnxDecoder } from '../../src/engine/onnx-decoder.js';
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import { readModelDir } from '../../src/runtime/node/model-dir.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { expectError, MODEL, MODEL_DIR, postJson, testApp } from '../http/helpers.js';

const FIXTURES = new URL('../fixtures/peft/', import.meta.url).pathname;

interface PeftReference {
  prompts: Record<string, { text: string; ids: number[] }>;
  max_tokens: number;
  base: Record<string, { ids: number[]; text: string }>;
  adapters: Record<string, { prompt: string; ids: number[]; text: string; merged_last_logits: number[] }>;
  refused: Record<string, string>;
}

const reference = JSON.parse(readFileSync(join(FIXTURES, 'reference.json'), 'utf8')) as PeftReference;
const names = Object.keys(reference.adapters);

let engine: LocalEngine;
let app: ReturnType<typeof testApp>;

beforeAll(async () => {
  const loraModules = names.map((name) => `${name}=${join(FIXTURES, name)}`);
  const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL, loraModules, maxLoras: 4, maxLoraRank: 16, allowRuntimeLoraUpdating: true, loraRoot: FIXTURES, maxCpuLoras: 32 });
  engine = await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, lora: nodeLoraOptions(config) });
  app = testApp(engine, { loraModules: config.loraModules, maxLoras: 4, maxLoraRank: 16, allowRuntimeLoraUpdating: true, loraRoot: FIXTURES, maxCpuLoras: 32 });
});

afterAll(async () => {
  await engine?.dispose();
});

async function completion(model: string, prompt: string): Promise<string> {
  const res = await postJson(app, '/v1/completions', { model, prompt, max_tokens: reference.max_tokens, temperature: 0, ignore_eos: true });
  expect(res.status).toBe(200);
  return ((await res.json()) as { choices: Array<{ text: string }> }).choices[0].text;
}

describe('PEFT-saved adapters over HTTP give PEFT\'s greedy output', () => {
  for (const name of names) {
    it(name, async () => {
      const { prompt, text } = reference.adapters[name];
      expect(await completion(name, reference.prompts[prompt].text)).toBe(text);
    });
  }

  it('the base model gives transformers\' greedy output, and every adapter changes it', async () => {
    for (const [prompt, { text }] of Object.entries(reference.base)) expect(await completion(MODEL, reference.prompts[prompt].text)).toBe(text);
    for (const name of names) expect(reference.adapters[name].text).not.toBe(reference.base[reference.adapters[name].prompt].text);
  });

  it('every adapter and base requests in one batch (more adapters than slots) each give their reference', async () => {
    const jobs: Array<[string, string, string]> = [
      ...names.map((name): [string, string, string] => [name, reference.prompts[reference.adapters[name].prompt].text, reference.adapters[name].text]),
      ...Object.entries(reference.base).map(([prompt, { text }]): [string, string, string] => [MODEL, reference.prompts[prompt].text, text]),
    ];
    const stepsBefore = engine.stats().steps;
    const texts = await Promise.all(jobs.map(([model, prompt]) => completion(model, prompt)));
    texts.forEach((text, i) => expect(text, jobs[i][0]).toBe(jobs[i][2]));
    // Four slots for 17 adapters: rows of several adapters and the base shared model calls.
    expect(engine.stats().steps - stepsBefore).toBeLessThan((jobs.length * reference.max_tokens) / 2);
  });

  for (const [name, keyword] of Object.entries(reference.refused)) {
    it(`refuses the ${name} adapter, naming ${keyword}`, async () => {
      const message = await expectError(postJson(app, '/v1/load_lora_adapter', { lora_name: name, lora_path: join(FIXTURES, name) }), 400, 'BadRequestError');
      expect(message).toContain(keyword);
    });
  }
});

describe('PEFT\'s default targets (fused q|k|v lanes) and gate + up in the other backends', () => {
  const cases = ['default-q-v', 'gate-up', 'all-linear'];
  const settings = [
    ['onnxruntime-web\'s WebAssembly backend (workerd, browsers)', { backend: 'wasm' }],
    ['the model worker thread', { modelThread: 'worker' }],
  ] as const;
  for (const [label, setting] of settings) {
    it(label, async () => {
      const modules = cases.map((name) => ({ name, path: join(FIXTURES, name) }));
      const other = await createNodeEngine({ modelDir: MODEL_DIR, ...setting, lora: { maxLoras: 2, maxLoraRank: 16, modules, reader: readAdapterDir, runtimeUpdates: false } });
      try {
        const runs = cases.map(async (name) => {
          const ids: number[] = [];
          const params = defaultSamplingParams({ temperature: 0, maxTokens: reference.max_tokens, ignoreEos: true });
          const prompt = reference.prompts[reference.adapters[name].prompt].ids;
          for await (const delta of other.generate({ promptTokenIds: prompt, params, adapter: name })) ids.push(...delta.tokenIds);
          return ids;
        });
        const results = await Promise.all(runs);
        results.forEach((ids, i) => expect(ids, cases[i]).toEqual(reference.adapters[cases[i]].ids));
      } finally {
        await other.dispose();
      }
    });
  }
});

describe('the LoRA graph\'s logits equal the PEFT-merged model\'s (merge_and_unload)', () => {
  it('for every adapter, at the prompt\'s last position', async () => {
    const files = await readModelDir(MODEL_DIR);
    const { spec } = modelSpecFromFiles(files);
    const decoder = await OnnxDecoder.create(ort as unknown as OrtRuntime, files.onnx, spec);
    const built = buildLoraGraph(files.onnx, spec, { slots: 1, rank: 16, label: 'onnx/model.onnx' });
    const slots = new LoraSlots(built.layout);
    await decoder.attachLora(built.model, slots);
    const registry = new LoraRegistry(built.layout, spec.numLayers, 16, readAdapterDir, new Set([MODEL]));
    try {
      for (const name of names) {
        const adapter = await registry.load(name, join(FIXTURES, name));
        const slot = slots.acquire(adapter, new Set())!;
        const ids = reference.prompts[reference.adapters[name].prompt].ids;
        const { logits } = await decoder.run({
          batch: 1,
          seqLen: ids.length,
          inputIds: BigInt64Array.from(ids, BigInt),
          positionIds: BigInt64Array.from(ids, (_, i) => BigInt(i)),
          attentionMask: new BigInt64Array(ids.length).fill(1n),
          past: emptyKvCache(spec.numLayers, 1, spec.numKeyValueHeads, spec.headDim),
          loraSlots: [slot],
          logitsToKeep: 1,
        });
        const last = logits.subarray(logits.length - spec.vocabSize);
        const expected = reference.adapters[name].merged_last_logits;
        let worst = 0;
        for (let i = 0; i < spec.vocabSize; i++) worst = Math.max(worst, Math.abs(last[i] - expected[i]));
        expect(worst, name).toBeLessThan(2e-4);
        slots.release(adapter);
        registry.unload(name);
      }
    } finally {
      await decoder.dispose();
    }
  });
});
