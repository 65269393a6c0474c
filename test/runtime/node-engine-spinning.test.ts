/**
 * intraOpSpinning (issue #38: on by default, within a model call; off for several engines on
 * shared cores) reaches the onnxruntime session: the startup report says which, and greedy output stays llama2.c's
 * (golden-greedy.json). Spinning changes when threads wait, never what they compute.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { collectGeneration, golden, MODEL_DIR } from '../helpers/model.js';

const engines: LocalEngine[] = [];
afterAll(async () => {
  for (const engine of engines) await engine.dispose();
});

describe('intraOpSpinning', () => {
  it('is on by default with two intra-op threads, off when set so, and leaves greedy output as llama2.c gives it', async () => {
    const spinning = await createNodeEngine({ modelDir: MODEL_DIR, intraOpNumThreads: 2 });
    const plain = await createNodeEngine({ modelDir: MODEL_DIR, intraOpNumThreads: 2, intraOpSpinning: false });
    engines.push(spinning, plain);
    expect(spinning.loadReport.threads).toContain('spinning between kernels within a model call (intraOpSpinning)');
    expect(plain.loadReport.threads).toContain('no spinning between kernels (intraOpSpinning off)');
    const greedy = { temperature: 0, maxTokens: golden.completion_ids.length, ignoreEos: true };
    expect((await collectGeneration(spinning, golden.prompt_ids, greedy)).tokenIds).toEqual(golden.completion_ids);
    expect((await collectGeneration(plain, golden.prompt_ids, greedy)).tokenIds).toEqual(golden.completion_ids);
  });
});
