/**
 * Chunked prefill (scheduler.ts, chunked-prefill/): a long prompt arriving while streams
 * decode is prefilled in slices between their steps, so the streams keep producing tokens
 * meanwhile, and every greedy output is the one without chunking — the long prompt's, the
 * running streams', with several long prompts at once, with a kept prefix reused — on every
 * graph flavour the engine serves (as test/engine/prefix-cache/reuse.test.ts lists them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalEngine } from '../../../src/engine/local-engine.js';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import { convertedFlavour, GRAPH_FLAVOURS, greedyRun, type GreedyRun as Run } from '../../helpers/graph-flavours.js';
import { setStepTrace, type StepTraceEvent } from '../../../src/engine/chunked-prefill/step-trace.js';

const ids = (length: number, seed: number) => Array.from({ length }, (_, i) => 259 + ((seed * 31 + i * 17 + ((i * i) % 7)) % 253));
/** Short prompts (at most one slice: prefilled whole), decoding while the long ones arrive. */
const STREAM_PROMPTS = [[1, ...ids(12, 1)], [1, ...ids(15, 2)], [1, ...ids(7, 3)]];
/** Long for this 512-token model: 13 slices of 16 tokens. */
const LONG = [1, ...ids(199, 4)];
const OTHER_LONG = [1, ...ids(170, 5)];
const SLICE_TOKENS = 16;

const run = (engine: LocalEngine, prompt: number[], maxTokens: number, onToken?: (count: number) => void, signal?: AbortSignal): Promise<Run> =>
  greedyRun(engine, prompt, { temperature: 0, maxTokens, ignoreEos: true }, onToken, signal);

/**
 * Streams decoding, then `longPrompts` arriving once each stream has its first tokens. Returns
 * every output and how many tokens the streams produced between the long prompts' arrival
 * and the first long prompt's first token (what chunking is for: the streams go on).
 */
async function arrival(engine: LocalEngine, longPrompts: number[][], streamTokens = 80): Promise<{ streams: number[][]; longs: Run[]; tokensDuringPrefill: number }> {
  let produced = 0;
  let started = 0;
  let arrived = -1;
  let firstLongToken = -1;
  let startLongs!: () => void;
  const streamsStarted = new Promise<void>((resolve) => (startLongs = resolve));
  const streams = STREAM_PROMPTS.map((prompt) => {
    let first = true;
    return run(engine, prompt, streamTokens, (count) => {
      produced += count;
      if (first) {
        first = false;
        started += 1;
        if (started === STREAM_PROMPTS.length) startLongs();
      }
    });
  });
  await streamsStarted;
  arrived = produced;
  const longs = await Promise.all(
    longPrompts.map((prompt, index) =>
      run(engine, prompt, 8, () => {
        if (index === 0 && firstLongToken < 0) firstLongToken = produced;
      }),
    ),
  );
  const done = await Promise.all(streams);
  return { streams: done.map((each) => each.tokenIds), longs, tokensDuringPrefill: firstLongToken - arrived };
}

describe.each(GRAPH_FLAVOURS)('chunked prefill on the $name graph', (flavour) => {
  let remove: () => Promise<void>;
  let chunked: LocalEngine;
  let whole: LocalEngine;
  /** Each prompt's greedy output run alone, without chunking or prefix reuse. */
  const alone = new Map<number[], number[]>();
  const soloOf = async (prompt: number[], maxTokens: number) => {
    if (!alone.has(prompt)) alone.set(prompt, (await run(whole, prompt, 80)).tokenIds);
    return alone.get(prompt)!.slice(0, maxTokens);
  };

  beforeAll(async () => {
    const converted = await convertedFlavour(flavour, 'chunked-prefill-');
    remove = converted.remove;
    chunked = await createNodeEngine({ ...converted.engineOptions, limits: { longPrefillTokenThreshold: SLICE_TOKENS } });
    whole = await createNodeEngine({ ...converted.engineOptions, limits: { enableChunkedPrefill: false, enablePrefixCaching: false } });
  });

  afterAll(async () => {
    await chunked?.dispose();
    await whole?.dispose();
    await remove?.();
  });

  it('is on by default and off with enableChunkedPrefill false', () => {
    expect(chunked.loadReport.chunkedPrefill).toEqual({ on: true });
    expect(whole.loadReport.chunkedPrefill).toEqual({ on: false, reason: 'the enable_chunked_prefill setting is false' });
  });

  it('keeps running streams going while a long prompt is prefilled, every output as without chunking', async () => {
    const steps: StepTraceEvent[] = [];
    setStepTrace((event) => event.kind === 'step' && steps.push(event));
    const sliced = await arrival(chunked, [LONG]).finally(() => setStepTrace(null));
    if (flavour.modelThread === 'worker') {
      // Two lanes: the long row runs in a lane of its own; the streams' batch is never padded to its 200 slots.
      const streamLane = steps.find((step) => step.size === STREAM_PROMPTS.length)!.lane;
      const longLane = steps.filter((step) => step.lane !== streamLane);
      expect(longLane.length).toBeGreaterThan(0);
      expect(longLane.every((step) => step.size === 1)).toBe(true);
      expect(steps.filter((step) => step.lane === streamLane).every((step) => step.size <= STREAM_PROMPTS.length)).toBe(true);
    }
    expect(sliced.longs[0]!.tokenIds).toEqual(await soloOf(LONG, 8));
    for (const [index, prompt] of STREAM_PROMPTS.entries()) expect(sliced.streams[index]).toEqual(await soloOf(prompt, 80));
    // 13 slices, a decode step after each: the 3 streams gain a token per step.
    expect(sliced.tokensDuringPrefill).toBeGreaterThanOrEqual(3 * 8);
    // Without chunking the whole prefill runs between two steps: the streams wait for it.
    const frozen = await arrival(whole, [LONG]);
    expect(frozen.tokensDuringPrefill).toBeLessThanOrEqual(3 * 2);
    expect(frozen.longs[0]!.tokenIds).toEqual(sliced.longs[0]!.tokenIds);
  });

  it('prefills several long prompts arriving together in turn, their output as without chunking', async () => {
    // Streams of 48 tokens: they end while the second prompt is sliced, whose rest then goes in one slice.
    // (Longer ones on the q4 graph share late steps with a long row they do not meet without
    // chunking, and a q4 row's logits move with the batch within the int8 tolerance: q4-batched.test.ts.)
    const sliced = await arrival(chunked, [OTHER_LONG, [1, ...ids(120, 6)]], 48);
    expect(sliced.longs[0]!.tokenIds).toEqual(await soloOf(OTHER_LONG, 8));
    expect(sliced.longs[1]!.tokenIds).toEqual(await soloOf([1, ...ids(120, 6)], 8));
    for (const [index, prompt] of STREAM_PROMPTS.entries()) expect(sliced.streams[index]).toEqual(await soloOf(prompt, 48));
  });

  it('slices only what a kept prefix leaves, with the output of a prompt run whole', async () => {
    // Kept: the first 100 tokens (and the reply's first token, which is not the prompt's 101st).
    const prompt = [1, ...ids(199, 8)];
    await run(chunked, prompt.slice(0, 100), 2);
    const sliced = await arrival(chunked, [prompt]);
    expect(sliced.longs[0]!.cached).toBe(100);
    expect(sliced.longs[0]!.tokenIds).toEqual(await soloOf(prompt, 8));
    // Its whole prompt is kept once sliced: the same prompt again reuses all but its last token.
    expect((await run(chunked, prompt, 4)).cached).toBe(199);
  });

  it('drops a long prompt whose client goes away mid-prefill; the streams go on unharmed', async () => {
    const controller = new AbortController();
    let aborted!: Promise<Run>;
    let started = 0;
    const streams = STREAM_PROMPTS.map((prompt) => {
      let first = true;
      return run(chunked, prompt, 60, () => {
        if (!first) return;
        first = false;
        started += 1;
        if (started === STREAM_PROMPTS.length) {
          aborted = run(chunked, [1, ...ids(230, 7)], 8, undefined, controller.signal);
          setTimeout(() => controller.abort(), 5);
        }
      });
    });
    const done = await Promise.all(streams);
    await aborted.catch(() => undefined);
    for (const [index, prompt] of STREAM_PROMPTS.entries()) expect(done[index]!.tokenIds).toEqual(await soloOf(prompt, 60));
    // The engine serves on: a later long prompt's output is unchanged.
    expect((await arrival(chunked, [OTHER_LONG])).longs[0]!.tokenIds).toEqual(await soloOf(OTHER_LONG, 8));
  });
});
