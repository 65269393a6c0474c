/**
 * Greedy decoding with the committed model reproduces llama2.c's reference output token for
 * token, on both runtimes the project ships (onnxruntime-node, onnxruntime-web WASM), and
 * the TypeScript oracle the other tests trust reproduces it too.
 */
import { readFile } from 'node:fs/promises';
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { beforeAll, describe, expect, it } from 'vitest';
import { argmax, Llama2cReference } from './llama2c-reference.js';
import { COMMITTED_ONNX, loadGolden, loadSharedCheckpoint, type GoldenGreedy } from './model-paths.js';
import { DecoderHarness } from './onnx-decoder-harness.js';

let golden: GoldenGreedy;
let modelBytes: Uint8Array;

beforeAll(async () => {
  golden = await loadGolden();
  modelBytes = await readFile(COMMITTED_ONNX);
  ortWeb.env.wasm.numThreads = 1;
});

describe('greedy decoding reproduces golden-greedy.json', () => {
  it('with the TypeScript llama2.c reference (validates the test oracle)', async () => {
    const ref = new Llama2cReference(await loadSharedCheckpoint());
    let logits: Float32Array = new Float32Array(0);
    golden.prompt_ids.forEach((t, pos) => (logits = ref.forward(t, pos)));
    const generated: number[] = [];
    for (let pos = golden.prompt_ids.length; generated.length < golden.completion_ids.length; pos++) {
      const next = argmax(logits);
      generated.push(next);
      logits = ref.forward(next, pos);
    }
    expect(generated).toEqual(golden.completion_ids);
  });

  it('on onnxruntime-node', async () => {
    const model = await DecoderHarness.create(ortNode, modelBytes);
    expect(await model.greedy(golden.prompt_ids, golden.completion_ids.length)).toEqual(golden.completion_ids);
  });

  it('on onnxruntime-web (WASM)', async () => {
    const model = await DecoderHarness.create(ortWeb, modelBytes);
    expect(await model.greedy(golden.prompt_ids, golden.completion_ids.length)).toEqual(golden.completion_ids);
  });
});
