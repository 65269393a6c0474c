/**
 * Worker mode keeps the event loop free during a model call: a heartbeat (a chain of
 * setImmediate callbacks, each of which lets I/O and timers run) keeps beating while a
 * long step runs in the worker. In main mode onnxruntime-node's run is synchronous, so
 * the same heartbeat cannot beat at all during the call: the contrast shows the count
 * measures where the call runs. No clock is read; a count of beats is compared with 0.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomLlamaFolder, SHAPE_5M } from '../../../scripts/threads/random-llama.js';
import { emptyKvCache } from '../../../src/engine/kv/kv-cache.js';
import type { LocalEngine } from '../../../src/engine/local-engine.js';
import { promptInput, type Decoder } from '../../../src/engine/onnx-decoder.js';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import { collectGeneration } from '../../helpers/model.js';
import { countLoopTurns } from '../../helpers/loop-turns.js';

/** ~5M parameters (21 MB): a 400-token prompt is a step of tens of milliseconds or more. */
const LONG_STEP_SHAPE = SHAPE_5M;
const PROMPT = Array.from({ length: 400 }, (_, i) => 3 + ((i * 37) % 500));

let parent: string;
let modelDir: string;
let worker: LocalEngine;
let main: LocalEngine;

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'long-step-'));
  modelDir = await randomLlamaFolder(LONG_STEP_SHAPE, 5, parent);
  [worker, main] = await Promise.all([
    createNodeEngine({ modelDir, modelThread: 'worker', intraOpNumThreads: 1 }),
    createNodeEngine({ modelDir, modelThread: 'main', intraOpNumThreads: 1 }),
  ]);
});

afterAll(async () => {
  await Promise.all([worker?.dispose(), main?.dispose()]);
  await rm(parent, { recursive: true, force: true });
});

function decoderOf(engine: LocalEngine): Decoder {
  return (engine as unknown as { decoder: Decoder }).decoder;
}

/** Heartbeats counted while one prefill of PROMPT runs on the engine's decoder. */
async function beatsDuringStep(engine: LocalEngine): Promise<number> {
  const decoder = decoderOf(engine);
  const { spec, contract } = decoder;
  const past = emptyKvCache(spec.numLayers, 1, spec.numKeyValueHeads, spec.headDim, contract.kvType);
  const step = decoder.run({ ...promptInput(PROMPT, past), logitsToKeep: 1 });
  const loop = countLoopTurns();
  const { present } = await step;
  loop.stop();
  const counted = loop.turns;
  present.remote?.release();
  return counted;
}

describe('the event loop during a long step', () => {
  it('keeps beating in worker mode, and cannot beat in main mode', async () => {
    const beats = await beatsDuringStep(worker);
    expect(beats).toBeGreaterThan(0);
    expect(await beatsDuringStep(main)).toBe(0);
  });

  it('the long-step model gives the same greedy tokens in both modes', async () => {
    const params = { temperature: 0, maxTokens: 12, ignoreEos: true };
    const prompt = PROMPT.slice(0, 40);
    expect((await collectGeneration(worker, prompt, params)).tokenIds).toEqual((await collectGeneration(main, prompt, params)).tokenIds);
  });
});
