/**
 * gemma2, gemma3, qwen3moe and qwen2moe GGUFs in the page (runtime/browser/gguf.ts: the graph
 * built in memory, run by onnxruntime-web's WASM backend, FastGelu, the soft-caps, the q/k norms,
 * the two rope tables and the MoE kernel included) against transformers'
 * Gemma2/Gemma3/Qwen3Moe/Qwen2MoeForCausalLM on the same weights
 * (test/fixtures/gguf/tiny-*-reference.json, made by scripts/gguf/make_gemma{2,3}_fixtures.py
 * and make_moe_fixtures.py): the prompt tokenizes to the ids the tokenizer library
 * (sentencepiece, HF tokenizers) gave, and the greedy continuation (for gemma, past the
 * sliding window) is transformers' own.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ortWeb from 'onnxruntime-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import { createBrowserApp, type BrowserApp } from '../../src/runtime/browser/engine.js';
import { blobByteSource } from '../../src/runtime/browser/gguf.js';
import { ggufModelFiles } from '../../src/gguf/gguf-model-files.js';

const FIXTURES = new URL('../fixtures/gguf/', import.meta.url).pathname;

// What sets each architecture apart, as the startup report names it.
const CASES = [
  { architecture: 'gemma2', feature: /sliding window of 16 positions on layers 0, 2 \(of 4\)/ },
  { architecture: 'gemma3', feature: /sliding window of 16 positions on 6 of 7 layers \(rope base 10000, unscaled\); full attention on layers 5 \(rope base 1000000, linear scaling ×8\)/ },
  { architecture: 'qwen3moe', feature: /8 experts of width 32 \(top 2, renormalised\)[^]*float32 \(experts, in the MoE kernel\)/ },
  { architecture: 'qwen2moe', feature: /8 experts of width 32 \(top 2, not renormalised\), a shared expert of width 96/ },
];

describe.each(CASES)('a $architecture GGUF in the page (onnxruntime-web WASM) against transformers', ({ architecture, feature }) => {
  const FILE = `tiny-${architecture}.gguf`;
  const REFERENCE = JSON.parse(readFileSync(join(FIXTURES, `tiny-${architecture}-reference.json`), 'utf8')) as {
    generations: Array<{ prompt: string; prompt_ids: number[]; greedy_ids: number[] }>;
  };
  let app: BrowserApp;
  let notes: string[];

  beforeAll(async () => {
    const bytes = await readFile(join(FIXTURES, FILE));
    const built = await ggufModelFiles(blobByteSource(new Blob([bytes])), { name: FILE, executedBy: 'onnxruntime-web (WebAssembly)' });
    notes = built.notes;
    ortWeb.env.wasm.numThreads = 1;
    app = await createBrowserApp({ ort: ortWeb as unknown as OrtRuntime, files: built.files, servedModelName: FILE });
  }, 120_000);

  afterAll(async () => {
    await app?.engine.dispose();
  });

  const ask = async (path: string, body: unknown) => {
    const response = await app.app.fetch(new Request(`http://page${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
    expect(response.status).toBe(200);
    return (await response.json()) as any;
  };

  it('tokenizes as the tokenizer library and continues greedily as transformers does', async () => {
    for (const { prompt, prompt_ids: promptIds, greedy_ids: greedyIds } of REFERENCE.generations) {
      expect((await ask('/tokenize', { model: FILE, prompt })).tokens).toEqual(promptIds);
      const completion = await ask('/v1/completions', { model: FILE, prompt: promptIds, max_tokens: greedyIds.length, temperature: 0 });
      const expected = (await ask('/detokenize', { model: FILE, tokens: greedyIds })).prompt;
      expect(completion.choices[0].text).toBe(expected);
      expect(completion.usage.completion_tokens).toBe(greedyIds.length);
    }
  }, 60_000);

  it(`reports ${architecture} and what sets it apart`, () => {
    expect(notes[0]).toMatch(new RegExp(`^GGUF: architecture ${architecture}`));
    expect(notes.join('\n')).toMatch(feature);
  });
});
