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
import type { SamplingParams } from '../../src/sampling/params.js';
import { expectInvalidRequest } from './expect-error.js';

function context(overrides: Partial<SamplingContext> = {}): SamplingContext {
  return { generationDefaults: {}, maxIterTimes: 512, maxModelLen: 512, eosTokenIds: [2], vocabSize: 512, ...overrides };
}

const mindie = (json: string, ctx = context(), promptTokens = 5) =>
  mindieToSamplingParams(parseRequest(MindieGenerateRequestSchema, parseJsonBody(json)), ctx, promptTokens);
const completion = (extra: string, ctx = context(), promptTokens = 5) =>
  completionToSamplingParams(
    parseRequest(CompletionRequestSchema, parseJsonBody(`{"model": "m", "prompt": "hi"${extra ? `, ${extra}` : ''}}`)),
    ctx,
    promptTokens,
  );
const chat = (extra: string, ctx = context(), promptTokens = 5) =>
  chatToSamplingParams(
    parseRequest(
      ChatCompletionRequestSchema,
      parseJsonBody(`{"model": "m", "messages": [{"role": "user", "content": "hi"}]${extra ? `, ${extra}` : ''}}`),
    ),
    ctx,
    promptTokens,
  );

const GENERATION_DEFAULTS: Partial<SamplingParams> = {
  temperature: 0.6,
  topP: 0.9,
  topK: 40,
  minP: 0.05,
  repetitionPenalty: 1.1,
};

describe('mindieToSamplingParams', () => {
  it('uses the documented constants when neither the request nor the model says otherwise', () => {
    expect(mindie('{"prompt": "hi"}')).toEqual({
      maxTokens: 507, // maxIterTimes 512, but only 512 - 5 positions are left
      minTokens: 0,
      temperature: 1,
      topK: -1,
      topP: 1,
      minP: 0,
      repetitionPenalty: 1,
      presencePenalty: 0,
      frequencyPenalty: 0,
      seed: undefined,
      stop: [],
      stopTokenIds: [],
      includeStopStrInOutput: false,
      ignoreEos: false,
      skipSpecialTokens: true,
      n: 1,
      bestOf: 1,
      logprobsMode: 'processed_logprobs',
    } satisfies SamplingParams);
  });

  it('falls back to generation_config, and the request wins over it', () => {
    const ctx = context({ generationDefaults: GENERATION_DEFAULTS });
    expect(mindie('{"prompt": "hi"}', ctx)).toMatchObject({ temperature: 0.6, topP: 0.9, topK: 40, minP: 0.05, repetitionPenalty: 1.1 });
    expect(mindie('{"prompt": "hi", "temperature": 0.9, "top_p": 0.5, "top_k": 7, "repetition_penalty": 1.0}', ctx)).toMatchObject({
      temperature: 0.9,
      topP: 0.5,
      topK: 7,
      repetitionPenalty: 1,
    });
  });

  it('caps max_tokens at maxIterTimes, and defaults to it', () => {
    const ctx = context({ maxIterTimes: 100, maxModelLen: 4096 });
    expect(mindie('{"prompt": "hi", "max_tokens": 20}', ctx).maxTokens).toBe(20);
    expect(mindie('{"prompt": "hi", "max_tokens": 2147483647}', ctx).maxTokens).toBe(100);
    expect(mindie('{"prompt": "hi"}', ctx).maxTokens).toBe(100);
  });

  it('clamps max_tokens to the context left after the prompt instead of failing', () => {
    expect(mindie('{"prompt": "hi", "max_tokens": 100}', context(), 500).maxTokens).toBe(12);
    expect(mindie('{"prompt": "hi", "max_tokens": 100}', context({ maxSeqLen: 256 }), 250).maxTokens).toBe(6);
    expect(mindie('{"prompt": "hi"}', context(), 511).maxTokens).toBe(1);
    const error = expectInvalidRequest(() => mindie('{"prompt": "hi"}', context(), 512));
    expect(error.param).toBe('prompt');
    expect(error.message).toMatch(/no room to generate/);
  });

  it('disables top_k that keeps the whole vocabulary', () => {
    expect(mindie('{"prompt": "hi", "top_k": 511}').topK).toBe(511);
    expect(mindie('{"prompt": "hi", "top_k": 512}').topK).toBe(-1);
    expect(mindie('{"prompt": "hi", "top_k": 2147483647}').topK).toBe(-1);
  });

  it('treats temperature 0 as greedy: top_k/top_p/min_p reset, penalties kept', () => {
    const params = mindie('{"prompt": "hi", "temperature": 0, "top_k": 5, "top_p": 0.5, "repetition_penalty": 1.3, "presence_penalty": 0.5}', context({ generationDefaults: { minP: 0.1 } }));
    expect(params).toMatchObject({ temperature: 0, topK: -1, topP: 1, minP: 0, repetitionPenalty: 1.3, presencePenalty: 0.5 });
  });

  it('carries uint64 seeds through exactly', () => {
    expect(mindie('{"prompt": "hi", "seed": 18446744073709551615}').seed).toBe(18446744073709551615n);
    expect(mindie('{"prompt": "hi", "seed": 9007199254740993}').seed).toBe(9007199254740993n);
    expect(mindie('{"prompt": "hi", "seed": null}').seed).toBeUndefined();
  });

  it('passes stop strings, filtered stop_token_ids and flags through', () => {
    expect(
      mindie('{"prompt": "hi", "stop": "The end", "stop_token_ids": [7, 1.5, 9], "include_stop_str_in_output": true, "ignore_eos": true, "skip_special_tokens": false}'),
    ).toMatchObject({ stop: ['The end'], stopTokenIds: [7, 9], includeStopStrInOutput: true, ignoreEos: true, skipSpecialTokens: false });
  });

  it('requires temperature > 0 when n or best_of is above 1', () => {
    expect(() => mindie('{"prompt": "hi", "n": 2, "best_of": 2, "temperature": 0.5}')).not.toThrow();
    for (const body of [
      '{"prompt": "hi", "n": 2, "temperature": 0}',
      '{"prompt": "hi", "best_of": 2, "temperature": 0}',
    ]) {
      const error = expectInvalidRequest(() => mindie(body));
      expect(error.param).toBe('temperature');
      expect(error.message).toMatch(/temperature must be greater than 0/);
    }
    // A greedy model default counts too.
    expect(() => mindie('{"prompt": "hi", "n": 2}', context({ generationDefaults: { temperature: 0 } }))).toThrow(/temperature/);
  });
});

describe('completionToSamplingParams / chatToSamplingParams: defaults', () => {
  it('defaults temperature/top_k/top_p to 1.0/-1/1.0', () => {
    for (const params of [completion(''), chat('')]) {
      expect(params).toMatchObject({ temperature: 1, topK: -1, topP: 1, minP: 0, repetitionPenalty: 1, minTokens: 0, seed: undefined });
    }
  });

  it('defaults max_tokens to 16 for completions (spec table) and to the rest of the context for chat (vLLM, OpenAI)', () => {
    expect(completion('').maxTokens).toBe(16);
    expect(chat('', context(), 5).maxTokens).toBe(512 - 5);
    expect(chat('', context({ maxSeqLen: 100 }), 30).maxTokens).toBe(70);
    // generation_config's max_new_tokens still wins when the model sets one.
    expect(chat('', context({ generationDefaults: { maxTokens: 64 } }), 5).maxTokens).toBe(64);
  });

  it('uses generation_config defaults, including its max_tokens, below the request', () => {
    const ctx = context({ generationDefaults: { ...GENERATION_DEFAULTS, maxTokens: 64 } });
    expect(completion('', ctx)).toMatchObject({ maxTokens: 64, temperature: 0.6, topK: 40, topP: 0.9, minP: 0.05, repetitionPenalty: 1.1 });
    expect(chat('"max_tokens": 8, "temperature": 0.2, "top_k": -1', ctx)).toMatchObject({ maxTokens: 8, temperature: 0.2, topK: -1 });
  });

  it('treats max_tokens null as "up to the context length" (vLLM)', () => {
    expect(completion('"max_tokens": null', context(), 12).maxTokens).toBe(500);
    expect(chat('"max_completion_tokens": null', context({ maxSeqLen: 100 }), 12).maxTokens).toBe(88);
  });

  it('prefers max_completion_tokens over max_tokens in chat', () => {
    expect(chat('"max_tokens": 5, "max_completion_tokens": 9').maxTokens).toBe(9);
  });

  it('applies greedy resets and the top_k vocabulary rule', () => {
    expect(completion('"temperature": 0, "top_k": 3, "top_p": 0.2, "min_p": 0.3')).toMatchObject({ topK: -1, topP: 1, minP: 0 });
    expect(completion('"top_k": 600')).toMatchObject({ topK: -1 });
    expect(completion('"top_k": 50')).toMatchObject({ topK: 50 });
  });

  it('maps seeds as vLLM does: -1 is random, int64 negatives keep their bits', () => {
    expect(completion('"seed": -1').seed).toBeUndefined();
    expect(completion('"seed": -2').seed).toBe(2n ** 64n - 2n);
    expect(completion('"seed": 9223372036854775807').seed).toBe(2n ** 63n - 1n);
    expect(chat('"seed": 9007199254740993').seed).toBe(9007199254740993n);
  });

  it('passes the stop configuration through', () => {
    expect(completion('"stop": "\\n\\n", "stop_token_ids": [3], "include_stop_str_in_output": true, "ignore_eos": true, "skip_special_tokens": false, "min_tokens": 4')).toMatchObject({
      stop: ['\n\n'],
      stopTokenIds: [3],
      includeStopStrInOutput: true,
      ignoreEos: true,
      skipSpecialTokens: false,
      minTokens: 4,
    });
  });
});

describe('OpenAI context length (vLLM messages)', () => {
  it('refuses prompt + max_tokens beyond the context with vLLM\'s message', () => {
    expect(() => completion('"max_tokens": 12', context(), 500)).not.toThrow();
    const error = expectInvalidRequest(() => completion('"max_tokens": 13', context(), 500));
    expect(error.message).toBe(
      "This model's maximum context length is 512 tokens. However, you requested 513 tokens (500 in the messages, 13 in the completion). Please reduce the length of the messages or completion.",
    );
    expect(error.param).toBe('max_tokens');
  });

  it('counts the default max_tokens too, blaming the prompt', () => {
    const error = expectInvalidRequest(() => completion('', context(), 500));
    expect(error.message).toContain('you requested 516 tokens (500 in the messages, 16 in the completion)');
    expect(error.param).toBe('prompt');
    // Chat's default is whatever room is left: only a prompt that fills the context fails.
    expect(chat('', context(), 511).maxTokens).toBe(1);
    expect(expectInvalidRequest(() => chat('', context(), 512)).param).toBe('messages');
  });

  it('uses the smaller of the model length and maxSeqLen', () => {
    const error = expectInvalidRequest(() => completion('"max_tokens": 10', context({ maxSeqLen: 100 }), 95));
    expect(error.message).toMatch(/^This model's maximum context length is 100 tokens/);
  });

  it('refuses a null max_tokens when the prompt fills the context', () => {
    const error = expectInvalidRequest(() => completion('"max_tokens": null', context(), 512));
    expect(error.message).toBe(
      "This model's maximum context length is 512 tokens. However, you requested 512 tokens in the messages, Please reduce the length of the messages.",
    );
  });

  it('requires min_tokens <= max_tokens', () => {
    expect(() => completion('"max_tokens": 4, "min_tokens": 4')).not.toThrow();
    const error = expectInvalidRequest(() => completion('"max_tokens": 4, "min_tokens": 5'));
    expect(error.param).toBe('min_tokens');
    expect(error.message).toBe('min_tokens must be less than or equal to max_tokens=4, got 5.');
  });
});

describe('OpenAI n / best_of / beam search / length_penalty rules (spec table)', () => {
  const cases: [string, string, string | null][] = [
    // [description, request fields, param at fault (null = accepted)]
    ['n > 1 with sampling', '"n": 2, "temperature": 0.7', null],
    ['n > 1 with greedy temperature', '"n": 2, "temperature": 0', 'temperature'],
    ['best_of > 1 with greedy temperature', '"best_of": 3, "temperature": 0', 'temperature'],
    ['n > 1 with top_k 1', '"n": 2, "top_k": 1', 'top_k'],
    ['n > 1 with top_k 2', '"n": 2, "top_k": 2', null],
    ['beam search, all constraints met', '"use_beam_search": true, "n": 2, "temperature": 0, "top_p": 1, "top_k": -1', null],
    ['beam search with n = 1', '"use_beam_search": true, "temperature": 0', 'n'],
    ['beam search with the default temperature', '"use_beam_search": true, "n": 2', 'temperature'],
    ['beam search with top_p < 1', '"use_beam_search": true, "n": 2, "temperature": 0, "top_p": 0.9', 'top_p'],
    ['beam search with top_k set', '"use_beam_search": true, "n": 2, "temperature": 0, "top_k": 5', 'top_k'],
    ['length_penalty with beam search', '"use_beam_search": true, "n": 2, "best_of": 2, "temperature": 0, "top_k": -1, "length_penalty": 0.8', null],
    ['length_penalty without beam search', '"length_penalty": 0.8', 'length_penalty'],
    ['length_penalty 1.0 without beam search', '"length_penalty": 1.0', null],
    ['early_stopping without beam search', '"early_stopping": true', 'early_stopping'],
  ];
  it.each(cases)('%s', (_name, fields, param) => {
    for (const run of [() => completion(fields), () => chat(fields)]) {
      if (param === null) {
        expect(run).not.toThrow();
      } else {
        const error = expectInvalidRequest(run);
        expect(error.param).toBe(param);
        expect(error.message).toContain(param);
      }
    }
  });

  it('checks beam search against generation_config defaults too', () => {
    const ctx = context({ generationDefaults: { topK: 50 } });
    expect(expectInvalidRequest(() => completion('"use_beam_search": true, "n": 2, "temperature": 0', ctx)).param).toBe('top_k');
  });
});
