/**
 * The sampler against current vLLM's V1 sampler, by figures: test/fixtures/sampling/
 * vllm-reference.json holds, per case, the four logprobs modes' rows as vLLM's code path
 * computes them in torch (scripts/sampling/vllm_sampling_reference.py follows
 * vllm/v1/sample/sampler.py, its builtin logits processors, apply_penalties and
 * apply_top_k_top_p step by step). The draw is vLLM's own RNG and is not compared: what a
 * user reads (each token's reported logprob, the top alternatives, which tokens can be
 * drawn at all) is.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LOGPROBS_MODES, defaultSamplingParams, type LogprobsMode, type SamplingParams } from '../../src/sampling/params.js';
import { Sampler } from '../../src/sampling/sampler.js';

interface ReferenceCase {
  name: string;
  logits: number[];
  temperature: number;
  top_k?: number;
  top_p?: number;
  min_p?: number;
  prompt?: number[];
  output?: number[];
  repetition_penalty?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  logit_bias?: Record<string, number>;
  min_tokens?: number;
  stop_ids?: number[];
}

type Row = Array<number | null>;
type Reference = { case: ReferenceCase; greedy_token: number; old_order_support?: number[] } & Record<LogprobsMode, Row>;

const fixture: { vocab: number; cases: Reference[] } = JSON.parse(
  readFileSync(new URL('../fixtures/sampling/vllm-reference.json', import.meta.url), 'utf8'),
);

const TOP = 5;

function paramsOf(c: ReferenceCase, mode: LogprobsMode, seed: bigint): SamplingParams {
  return defaultSamplingParams({
    temperature: c.temperature,
    topK: c.top_k ?? -1,
    topP: c.top_p ?? 1,
    minP: c.min_p ?? 0,
    repetitionPenalty: c.repetition_penalty ?? 1,
    frequencyPenalty: c.frequency_penalty ?? 0,
    presencePenalty: c.presence_penalty ?? 0,
    logitBias: c.logit_bias ? new Map(Object.entries(c.logit_bias).map(([id, bias]) => [Number(id), bias])) : undefined,
    minTokens: c.min_tokens ?? 0,
    stopTokenIds: c.stop_ids ?? [],
    logprobs: TOP,
    logprobsMode: mode,
    seed,
  });
}

/** The reference's k best finite entries, best first (lower id first on ties). */
function referenceTop(row: Row, k: number): Array<{ tokenId: number; logprob: number }> {
  return row
    .map((value, tokenId) => ({ tokenId, logprob: value ?? -Infinity }))
    .filter((entry) => entry.logprob > -Infinity)
    .sort((a, b) => b.logprob - a.logprob || a.tokenId - b.tokenId)
    .slice(0, k);
}

const support = (row: Row) => row.flatMap((value, id) => (value === null ? [] : [id]));

describe('sampling figures equal current vLLM (V1 sampler, torch reference)', () => {
  it('has the cases it checks', () => {
    expect(fixture.cases.length).toBeGreaterThanOrEqual(7);
  });

  for (const reference of fixture.cases) {
    const c = reference.case;
    describe(c.name, () => {
      for (const mode of LOGPROBS_MODES) {
        it(`${mode}: the drawn token's logprob and the top ${TOP} are vLLM's`, () => {
          const expectedRow = reference[mode];
          const drawable = new Set(support(reference.processed_logprobs));
          for (let seed = 1n; seed <= 12n; seed++) {
            const sampler = new Sampler(paramsOf(c, mode, seed), { vocabSize: fixture.vocab, eosTokenIds: [] });
            const sampled = sampler.sample(Float32Array.from(c.logits), { promptTokenIds: c.prompt ?? [], outputTokenIds: c.output ?? [] });
            expect(drawable.has(sampled.tokenId)).toBe(true);
            if (c.temperature === 0) expect(sampled.tokenId).toBe(reference.greedy_token);
            expect(sampled.logprob).toBeCloseTo(expectedRow[sampled.tokenId]!, 4);
            const top = referenceTop(expectedRow, TOP);
            expect(sampled.topLogprobs!.map((t) => t.tokenId)).toEqual(top.map((t) => t.tokenId));
            sampled.topLogprobs!.forEach((t, i) => expect(t.logprob).toBeCloseTo(top[i]!.logprob, 4));
          }
        });
      }
    });
  }

  it('runs min-p before top-p: the tokens that can be drawn are vLLM V1\'s, not vLLM 0.6\'s', () => {
    const reference = fixture.cases.find((entry) => entry.old_order_support !== undefined)!;
    const expected = support(reference.processed_logprobs);
    expect(expected).not.toEqual(reference.old_order_support);
    const seen = new Set<number>();
    for (let seed = 1n; seed <= 200n; seed++) {
      const sampler = new Sampler(paramsOf(reference.case, 'processed_logprobs', seed), { vocabSize: fixture.vocab, eosTokenIds: [] });
      seen.add(sampler.sample(Float32Array.from(reference.case.logits), { promptTokenIds: [], outputTokenIds: [] }).tokenId);
    }
    expect([...seen].sort((a, b) => a - b)).toEqual(expected);
  });

  it('at temperature 0.5 the raw and processed top logprobs differ by nats, as the issue measured', () => {
    const reference = fixture.cases.find((entry) => entry.case.name === 'temperature 0.5')!;
    const gaps = reference.raw_logprobs.map((raw, id) => Math.abs(raw! - reference.processed_logprobs[id]!));
    expect(Math.max(...gaps)).toBeGreaterThan(1);
  });
});
