/**
 * GenerationRun, the HTTP layer's hold on one request's generation: a consumer that stops
 * early stops the generation; a run read to its end is left alone (nothing to stop).
 */
import { describe, expect, it } from 'vitest';
import type { Engine, GenerateRequest } from '../../src/engine/types.js';
import { GenerationRun } from '../../src/http/generation.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { embeddedEngine } from '../helpers/model.js';

/** The embedded engine, remembering the signal each request was handed. */
async function watchedEngine(): Promise<{ engine: Engine; signals: AbortSignal[] }> {
  const real = await embeddedEngine();
  const signals: AbortSignal[] = [];
  const engine = Object.create(real) as Engine;
  engine.generate = (request: GenerateRequest) => {
    signals.push(request.signal!);
    return real.generate(request);
  };
  return { engine, signals };
}

const prompt = [1, 403, 407, 261, 378];

describe('GenerationRun', () => {
  it('reads every token of a run to its end without aborting its signal', async () => {
    const { engine, signals } = await watchedEngine();
    const run = await GenerationRun.start(engine, prompt, defaultSamplingParams({ temperature: 0, maxTokens: 6, ignoreEos: true }));
    let tokens = 0;
    for await (const delta of run) tokens += delta.tokenIds.length;
    expect(tokens).toBe(6);
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(false);
  });

  it('aborts the generation when its consumer stops early', async () => {
    const { engine, signals } = await watchedEngine();
    const run = await GenerationRun.start(engine, prompt, defaultSamplingParams({ temperature: 0, maxTokens: 200, ignoreEos: true }));
    let tokens = 0;
    for await (const delta of run) {
      tokens += delta.tokenIds.length;
      if (tokens >= 3) break;
    }
    expect(signals[0]!.aborted).toBe(true);
    // The engine let the request go: its rows are no longer counted as running.
    await expect.poll(() => engine.stats().running).toBe(0);
  });

  it('aborts the generation when the client signal fires', async () => {
    const { engine, signals } = await watchedEngine();
    const client = new AbortController();
    const run = await GenerationRun.start(engine, prompt, defaultSamplingParams({ temperature: 0, maxTokens: 200, ignoreEos: true }), client.signal);
    const reasons: Array<string | null> = [];
    for await (const delta of run) {
      if (reasons.length === 1) client.abort();
      reasons.push(delta.finishReason);
    }
    expect(signals[0]!.aborted).toBe(true);
    expect(reasons.at(-1)).toBe('abort');
    expect(reasons.length).toBeLessThan(200);
  });
});
