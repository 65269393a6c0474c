import { describe, expect, it } from 'vitest';
import { BeamSearchGroup } from '../../src/engine/beam-search.js';
import type { GenerationDelta } from '../../src/engine/types.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';
import { TOY_EOS, TOY_VOCAB, logSoftmax, runToy, toyLimits, toyLogits, toyTokenizer } from './toy-model.js';

const PROMPT = [3, 1, 4];

interface Settings {
  width: number;
  n: number;
  maxTokens: number;
  lengthPenalty: number;
  earlyStopping: boolean | 'never';
  eosBias: number;
}

async function engineBeams(settings: Settings, extra: Partial<SamplingParams> = {}): Promise<GenerationDelta[]> {
  const params = defaultSamplingParams({
    temperature: 0,
    maxTokens: settings.maxTokens,
    n: settings.n,
    bestOf: settings.width,
    useBeamSearch: true,
    lengthPenalty: settings.lengthPenalty,
    earlyStopping: settings.earlyStopping,
    ...extra,
  });
  const group = new BeamSearchGroup(PROMPT, params, toyTokenizer, toyLimits());
  const deltas: GenerationDelta[] = [];
  const reading = (async () => {
    for await (const delta of group.deltas) deltas.push(delta);
  })();
  runToy(group, PROMPT, (history) => toyLogits(history, { eosBias: settings.eosBias }));
  await reading;
  return deltas;
}

interface RefBeam {
  tokens: number[];
  cum: number;
}

/**
 * The beam search of vLLM 0.6 written out plainly over whole sequences: every step asks
 * the toy model for each live beam's full distribution, keeps the 2·width best
 * extensions, files the finished ones, and applies the early-stopping rule.
 */
function referenceBeamSearch(s: Settings): Array<RefBeam & { reason: 'stop' | 'length' }> {
  const score = (b: RefBeam) => b.cum / (PROMPT.length + b.tokens.length - (b.tokens.at(-1) === TOY_EOS ? 1 : 0)) ** s.lengthPenalty;
  const ended = (b: RefBeam) => b.tokens.at(-1) === TOY_EOS || b.tokens.length >= s.maxTokens;
  const stableByScore = <T extends RefBeam>(list: T[]) =>
    list
      .map((b, order) => ({ b, order }))
      .sort((x, y) => score(y.b) - score(x.b) || x.order - y.order)
      .map(({ b }) => b);
  let live: RefBeam[] = [{ tokens: [], cum: 0 }];
  let finished: RefBeam[] = [];
  for (;;) {
    const extensions: Array<RefBeam & { order: number }> = [];
    live.forEach((beam, b) => {
      const logprobs = logSoftmax(toyLogits([...PROMPT, ...beam.tokens], { eosBias: s.eosBias }));
      logprobs.forEach((lp, t) => extensions.push({ tokens: [...beam.tokens, t], cum: beam.cum + lp, order: b * TOY_VOCAB + t }));
    });
    extensions.sort((x, y) => y.cum - x.cum || x.order - y.order);
    const candidates = extensions.slice(0, 2 * s.width);
    const allFinished = stableByScore([...finished, ...candidates.filter(ended)]);
    finished = allFinished.slice(0, s.width);
    const running = stableByScore(candidates.filter((c) => !ended(c)));
    let stop: boolean;
    if (running.length === 0) stop = true;
    else if (allFinished.length < s.width) stop = false;
    else if (s.earlyStopping === true) stop = true;
    else {
      const worst = score(finished[s.width - 1]);
      const best = running[0];
      const bestPossible =
        s.earlyStopping === 'never' && s.lengthPenalty > 0
          ? best.cum / Math.max(PROMPT.length + s.maxTokens, 64) ** s.lengthPenalty
          : score(best);
      stop = worst >= bestPossible;
    }
    if (stop) break;
    live = running.slice(0, s.width);
  }
  return finished.slice(0, s.n).map((b) => ({ ...b, reason: b.tokens.at(-1) === TOY_EOS ? 'stop' : 'length' }));
}

describe('beam search (toy model, vLLM 0.6 semantics)', () => {
  it('equals an exhaustive search when the beam is wide enough to keep everything', async () => {
    const settings: Settings = { width: TOY_VOCAB, n: 4, maxTokens: 2, lengthPenalty: 1, earlyStopping: false, eosBias: -100 };
    const beams = await engineBeams(settings);
    const all: RefBeam[] = [];
    const first = logSoftmax(toyLogits(PROMPT, { eosBias: -100 }));
    for (let a = 1; a < TOY_VOCAB; a++) {
      const second = logSoftmax(toyLogits([...PROMPT, a], { eosBias: -100 }));
      for (let b = 1; b < TOY_VOCAB; b++) all.push({ tokens: [a, b], cum: first[a] + second[b] });
    }
    all.sort((x, y) => y.cum - x.cum);
    expect(beams.map((d) => d.tokenIds)).toEqual(all.slice(0, 4).map((b) => b.tokens));
    beams.forEach((d, i) => expect(d.cumulativeLogprob).toBeCloseTo(all[i].cum, 5));
    expect(beams.map((d) => d.index)).toEqual([0, 1, 2, 3]);
  });

  const grid: Settings[] = [];
  for (const width of [2, 3])
    for (const lengthPenalty of [1, 0.5, 2, -1])
      for (const earlyStopping of [false, true, 'never'] as const)
        for (const eosBias of [0, 1.5]) grid.push({ width, n: width === 3 ? 2 : width, maxTokens: 5, lengthPenalty, earlyStopping, eosBias });

  it.each(grid)('matches the reference search: %o', async (settings) => {
    const beams = await engineBeams(settings);
    const reference = referenceBeamSearch(settings);
    expect(beams.map((d) => d.tokenIds)).toEqual(reference.map((b) => b.tokens));
    beams.forEach((d, i) => {
      expect(d.cumulativeLogprob).toBeCloseTo(reference[i].cum, 5);
      expect(d.finishReason).toBe(reference[i].reason);
      // The per-token logprobs add up to the reported cumulative score.
      expect(d.logprobs.reduce((a, b) => a + b, 0)).toBeCloseTo(d.cumulativeLogprob!, 5);
    });
  });

  it('returns distinct beams ranked by cumulative logprob / length^length_penalty', async () => {
    for (const lengthPenalty of [0.3, 1, 3]) {
      const beams = await engineBeams({ width: 4, n: 4, maxTokens: 6, lengthPenalty, earlyStopping: false, eosBias: 1.5 });
      const keys = beams.map((d) => d.tokenIds.join(','));
      expect(new Set(keys).size).toBe(beams.length);
      const scores = beams.map(
        (d) => d.cumulativeLogprob! / (PROMPT.length + d.tokenIds.length - (d.tokenIds.at(-1) === TOY_EOS ? 1 : 0)) ** lengthPenalty,
      );
      for (let i = 1; i < scores.length; i++) expect(scores[i - 1]).toBeGreaterThanOrEqual(scores[i]);
    }
  });

  it('favours longer beams as length_penalty grows', async () => {
    const settings = { width: 3, n: 3, maxTokens: 6, earlyStopping: false as const, eosBias: 1.5 };
    const meanLength = async (lengthPenalty: number) => {
      const beams = await engineBeams({ ...settings, lengthPenalty });
      return beams.reduce((sum, d) => sum + d.tokenIds.length, 0) / beams.length;
    };
    expect(await meanLength(4)).toBeGreaterThan(await meanLength(-2));
  });

  it('ends a beam at a stop string, dropping it from the text, and at a stop token', async () => {
    const free = await engineBeams({ width: 2, n: 2, maxTokens: 4, lengthPenalty: 1, earlyStopping: false, eosBias: -100 });
    const best = free[0].tokenIds;
    // Stop on the best beam's second token, as text and as a token id.
    const stopText = toyTokenizer.decode([best[1]]);
    const byText = await engineBeams({ width: 2, n: 2, maxTokens: 4, lengthPenalty: 1, earlyStopping: false, eosBias: -100 }, { stop: [stopText] });
    for (const beam of byText) {
      expect(beam.text).not.toContain(stopText);
      if (beam.finishReason === 'stop') expect(beam.stopReason).toBe(stopText);
    }
    expect(byText.some((beam) => beam.finishReason === 'stop')).toBe(true);
    const byToken = await engineBeams(
      { width: 2, n: 2, maxTokens: 4, lengthPenalty: 1, earlyStopping: false, eosBias: -100 },
      { stopTokenIds: [best[1]] },
    );
    expect(byToken.some((beam) => beam.finishReason === 'stop' && beam.stopReason === best[1] && beam.tokenIds.at(-1) === best[1])).toBe(true);
  });

  it('reports each beam\'s text, its top alternatives per token, and the prompt logprobs', async () => {
    const beams = await engineBeams(
      { width: 2, n: 2, maxTokens: 3, lengthPenalty: 1, earlyStopping: false, eosBias: -100 },
      { logprobs: 2, promptLogprobs: 1 },
    );
    for (const beam of beams) {
      expect(beam.text).toBe(toyTokenizer.decode(beam.tokenIds));
      expect(beam.topLogprobs).toHaveLength(beam.tokenIds.length);
      let history = [...PROMPT];
      beam.tokenIds.forEach((token, i) => {
        const expected = logSoftmax(toyLogits(history, { eosBias: -100 }));
        expect(beam.logprobs[i]).toBeCloseTo(expected[token], 5);
        const best = expected.map((lp, id) => ({ id, lp })).sort((a, b) => b.lp - a.lp);
        expect(beam.topLogprobs![i].map((t) => t.tokenId)).toEqual(best.slice(0, 2).map((b) => b.id));
        history = [...history, token];
      });
      expect(beam.promptLogprobs).toHaveLength(PROMPT.length);
      expect(beam.promptLogprobs![0]).toBeNull();
      expect(beam.promptLogprobs![1]!.logprob).toBeCloseTo(logSoftmax(toyLogits(PROMPT.slice(0, 1), { eosBias: -100 }))[PROMPT[1]], 5);
    }
  });

  it('drops finished beams beyond the width and never returns more than n', async () => {
    const beams = await engineBeams({ width: 3, n: 1, maxTokens: 4, lengthPenalty: 1, earlyStopping: false, eosBias: 1 });
    expect(beams).toHaveLength(1);
  });
});
