import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/protocol/json.js';
import { MindieGenerateRequestSchema } from '../../src/protocol/mindie.js';
import { ChatCompletionRequestSchema, CompletionRequestSchema } from '../../src/protocol/openai.js';
import {
  chatToSamplingParams,
  completionToSamplingParams,
  mindieToSamplingParams,
  type SamplingContext,
} from '../../src/protocol/sampling-params.js';
import { parseRequest } from '../../src/protocol/validate.js';
import { expectInvalidRequest } from './expect-error.js';

const ctx: SamplingContext = { generationDefaults: {}, maxIterTimes: 512, maxModelLen: 512, eosTokenIds: [2], vocabSize: 512 };

const mindie = (fields: string) =>
  mindieToSamplingParams(parseRequest(MindieGenerateRequestSchema, parseJsonBody(`{"prompt": "hi", ${fields}}`)), ctx, 5);
const completion = (fields: string) =>
  completionToSamplingParams(parseRequest(CompletionRequestSchema, parseJsonBody(`{"model": "m", "prompt": "hi", ${fields}}`)), ctx, 5);
const chat = (fields: string) =>
  chatToSamplingParams(
    parseRequest(ChatCompletionRequestSchema, parseJsonBody(`{"model": "m", "messages": [{"role": "user", "content": "hi"}], ${fields}}`)),
    ctx,
    5,
  );

describe('n and best_of reach the engine', () => {
  it('defaults best_of to n, on every endpoint', () => {
    expect(mindie('"n": 3, "temperature": 0.8')).toMatchObject({ n: 3, bestOf: 3 });
    expect(completion('"n": 3')).toMatchObject({ n: 3, bestOf: 3 });
    expect(chat('"n": 2, "best_of": 5')).toMatchObject({ n: 2, bestOf: 5 });
    expect(mindie('"n": null, "best_of": null')).toMatchObject({ n: 1, bestOf: 1 });
  });

  it('passes beam search settings only with use_beam_search', () => {
    const beam = completion('"use_beam_search": true, "n": 2, "best_of": 3, "temperature": 0, "length_penalty": 0.5, "early_stopping": "never"');
    expect(beam).toMatchObject({ n: 2, bestOf: 3, useBeamSearch: true, lengthPenalty: 0.5, earlyStopping: 'never' });
    expect(completion('"n": 2').useBeamSearch).toBeUndefined();
  });

  it('refuses streaming when best_of differs from n (the best n are only known at the end)', () => {
    for (const run of [() => completion('"n": 2, "best_of": 3, "stream": true'), () => chat('"best_of": 2, "stream": true')]) {
      const error = expectInvalidRequest(run);
      expect(error.param).toBe('best_of');
      expect(error.message).toMatch(/best_of must equal n when streaming/);
    }
    const error = expectInvalidRequest(() => mindie('"n": 1, "best_of": 2, "temperature": 1, "stream": true'));
    expect(error.param).toBe('best_of');
    // Equal counts stream, as in the MindIE spec's own streaming example (n = best_of = 2).
    expect(() => mindie('"n": 2, "best_of": 2, "temperature": 0.5, "stream": true')).not.toThrow();
    expect(() => completion('"n": 4, "stream": true')).not.toThrow();
  });

  it('refuses structured output with beam search', () => {
    const error = expectInvalidRequest(() => completion('"use_beam_search": true, "n": 2, "temperature": 0, "guided_choice": ["a", "b"]'));
    expect(error.param).toBe('use_beam_search');
    expect(error.message).toMatch(/guided_choice/);
  });

  it('refuses streaming beam search', () => {
    const error = expectInvalidRequest(() => chat('"use_beam_search": true, "n": 2, "temperature": 0, "stream": true'));
    expect(error.param).toBe('use_beam_search');
    expect(error.message).toMatch(/cannot stream/);
  });
});

describe('logprobs reach the engine', () => {
  it('maps completions logprobs, and echo asks for the prompt logprobs too (vLLM)', () => {
    expect(completion('"logprobs": 3')).toMatchObject({ logprobs: 3 });
    expect(completion('"logprobs": 3').promptLogprobs).toBeUndefined();
    expect(completion('"logprobs": 3, "echo": true')).toMatchObject({ logprobs: 3, promptLogprobs: 3 });
    expect(completion('"echo": true').promptLogprobs).toBeUndefined();
    expect(completion('"prompt_logprobs": 2')).toMatchObject({ promptLogprobs: 2 });
    expect(completion('"max_tokens": 3').logprobs).toBeUndefined();
  });

  it('maps chat logprobs + top_logprobs; top_logprobs defaults to 0 (chosen tokens only)', () => {
    expect(chat('"logprobs": true, "top_logprobs": 4')).toMatchObject({ logprobs: 4 });
    expect(chat('"logprobs": true')).toMatchObject({ logprobs: 0 });
    expect(chat('"logprobs": false').logprobs).toBeUndefined();
    expect(chat('"prompt_logprobs": 1')).toMatchObject({ promptLogprobs: 1 });
  });

  it('caps alternatives at 20 per token, as vLLM (max_logprobs)', () => {
    expect(() => completion('"logprobs": 20')).not.toThrow();
    const cases: [() => unknown, string][] = [
      [() => completion('"logprobs": 21'), 'logprobs'],
      [() => completion('"prompt_logprobs": 21'), 'prompt_logprobs'],
      [() => chat('"logprobs": true, "top_logprobs": 21'), 'top_logprobs'],
    ];
    for (const [run, param] of cases) {
      const error = expectInvalidRequest(run);
      expect(error.param).toBe(param);
      expect(error.message).toBe('Cannot request more than 20 logprobs.');
    }
  });
});
