import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../src/config/server-config.js';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, expectError, golden, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const request = { model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 1, logprobs: 20 };
const topOf = async (body: unknown, config: Partial<ServerConfig> = {}): Promise<Record<string, number>> => {
  const response = await postJson(testApp(engine, config), '/v1/completions', body);
  expect(response.status).toBe(200);
  return (await response.json()).choices[0].logprobs.top_logprobs[0];
};
const processed: Partial<ServerConfig> = { logprobsMode: 'processed_logprobs' };

describe('logit_bias', () => {
  it('leaves the reported logprobs alone under the default logprobsMode (raw: before logit_bias, as current vLLM)', async () => {
    const before = await topOf(request);
    const favourite = golden.completion_ids[0]!;
    const after = await topOf({ ...request, logit_bias: { [favourite]: -3 } });
    expect(after).toEqual(before);
  });

  it('with logprobsMode processed_logprobs, shifts the distribution by the formula: logprob\'(t) = logprob(t) + b − log(1 − p(t) + p(t)·e^b), the others by −log(…)', async () => {
    const before = await topOf(request, processed);
    // The greedy token (the golden continuation's first), pushed down by b.
    const favourite = golden.completion_ids[0]!;
    const [favouriteText, runnerUpText] = Object.entries(before).sort((a, b) => b[1] - a[1]).map(([text]) => text);
    for (const bias of [-3, 1.5]) {
      const after = await topOf({ ...request, logit_bias: { [favourite]: bias } }, processed);
      const p = Math.exp(before[favouriteText!]!);
      const shift = Math.log(1 - p + p * Math.exp(bias));
      expect(after[favouriteText!]).toBeCloseTo(before[favouriteText!]! + bias - shift, 4);
      expect(after[runnerUpText!]).toBeCloseTo(before[runnerUpText!]! - shift, 4);
    }
  });

  it('+100 makes a token the greedy choice at every step; −100 keeps the greedy token out', async () => {
    const app = testApp(engine);
    const forced = engine.tokenizer.encode('dog', { addSpecialTokens: false }).at(-1)!;
    const body = await (await postJson(app, '/v1/completions', { ...request, logprobs: undefined, max_tokens: 4, logit_bias: { [forced]: 100 } })).json();
    expect(body.choices[0].text).toBe(engine.tokenizer.decode([forced, forced, forced, forced]));
    const banned = await (await postJson(app, '/v1/chat/completions', {
      model: MODEL, messages: [{ role: 'user', content: golden.prompt }], temperature: 0, max_tokens: 1, logit_bias: { [golden.completion_ids[0]!]: -100 },
    })).json();
    expect(banned.choices[0].message.content).not.toBe(engine.tokenizer.decode([golden.completion_ids[0]!]));
  });

  it('refuses ids outside the vocabulary and clamps values to [-100, 100] as vLLM does', async () => {
    const app = testApp(engine);
    const vocab = engine.info.vocabSize;
    const message = await expectError(postJson(app, '/v1/completions', { ...request, logit_bias: { [vocab]: 1 } }), 400, 'BadRequestError', 'logit_bias');
    expect(message).toBe(`token_id(s) [${vocab}] in logit_bias contain out-of-vocab token ids. Vocabulary size: ${vocab}`);
    const notANumber = await expectError(postJson(app, '/v1/completions', { ...request, logit_bias: { 5: 'x' } }), 400, 'BadRequestError', 'logit_bias.5');
    expect(notANumber).toContain('must be a number');
    // Past the range is the range's end: the same processed distribution as ±100 exactly.
    const favourite = golden.completion_ids[0]!;
    const runnerUp = 5;
    for (const [past, edge] of [[-1e6, -100], [250, 100]] as const) {
      const clamped = await topOf({ ...request, logit_bias: { [favourite]: past, [runnerUp]: past } }, processed);
      const exact = await topOf({ ...request, logit_bias: { [favourite]: edge, [runnerUp]: edge } }, processed);
      expect(clamped).toEqual(exact);
    }
  });
});
