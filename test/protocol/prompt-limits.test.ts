import { describe, expect, it } from 'vitest';
import {
  MINDIE_PROMPT_TOKEN_CAP,
  checkPromptTokenIds,
  checkPromptTokenLimit,
  servedMaxModelLen,
  truncatePromptTokens,
} from '../../src/protocol/prompt-limits.js';
import { expectInvalidRequest } from './expect-error.js';

describe('checkPromptTokenLimit: MindIE', () => {
  // Each row makes a different limit the smallest of min(maxInputTokenLen, maxSeqLen - 1,
  // max_position_embeddings, 1M); the message must name that limit.
  const rows: [string, { maxInputTokenLen: number; maxSeqLen: number; maxModelLen: number }, number, RegExp][] = [
    ['maxInputTokenLen', { maxInputTokenLen: 511, maxSeqLen: 512, maxModelLen: 512 }, 511, /maxInputTokenLen is 511/],
    ['maxSeqLen - 1', { maxInputTokenLen: 1000, maxSeqLen: 300, maxModelLen: 512 }, 299, /maxSeqLen - 1 is 299/],
    ['max_position_embeddings', { maxInputTokenLen: 2000, maxSeqLen: 4000, maxModelLen: 1024 }, 1024, /max_position_embeddings is 1024/],
    ['the 1M cap', { maxInputTokenLen: 2 ** 22, maxSeqLen: 2 ** 22, maxModelLen: 2 ** 22 }, MINDIE_PROMPT_TOKEN_CAP, /1048576/],
  ];
  it.each(rows)('binds at %s', (_name, limits, limit, reason) => {
    expect(() => checkPromptTokenLimit(limit, limits, 'mindie')).not.toThrow();
    const error = expectInvalidRequest(() => checkPromptTokenLimit(limit + 1, limits, 'mindie'));
    expect(error.param).toBe('prompt');
    expect(error.message).toContain(`${limit + 1} tokens`);
    expect(error.message).toMatch(reason);
  });

  it('refuses an empty token list', () => {
    expect(expectInvalidRequest(() => checkPromptTokenLimit(0, { maxInputTokenLen: 9, maxSeqLen: 9, maxModelLen: 9 }, 'mindie')).message).toMatch(/empty/);
  });
});

describe('checkPromptTokenLimit: OpenAI', () => {
  const limits = { maxInputTokenLen: 100, maxSeqLen: 512, maxModelLen: 512 };

  it('accepts a prompt shorter than the context and refuses one that fills it, with vLLM\'s message', () => {
    expect(() => checkPromptTokenLimit(511, limits, 'openai')).not.toThrow();
    const error = expectInvalidRequest(() => checkPromptTokenLimit(512, limits, 'openai'));
    expect(error.message).toBe(
      "This model's maximum context length is 512 tokens. However, you requested 512 tokens in the messages, Please reduce the length of the messages.",
    );
    expect(error.param).toBe('messages');
    expect(expectInvalidRequest(() => checkPromptTokenLimit(600, limits, 'openai', 'prompt')).param).toBe('prompt');
  });

  it('lowers the context to maxSeqLen when that is smaller', () => {
    expect(servedMaxModelLen({ maxSeqLen: 256, maxModelLen: 512 })).toBe(256);
    expect(() => checkPromptTokenLimit(255, { ...limits, maxSeqLen: 256 }, 'openai')).not.toThrow();
    expect(expectInvalidRequest(() => checkPromptTokenLimit(256, { ...limits, maxSeqLen: 256 }, 'openai')).message).toMatch(/maximum context length is 256 tokens/);
  });
});

describe('prompt token ids', () => {
  it('refuses ids outside the vocabulary', () => {
    expect(() => checkPromptTokenIds([0, 511], 512)).not.toThrow();
    expect(expectInvalidRequest(() => checkPromptTokenIds([1, 512, 3], 512)).message).toBe('Token id 512 is out of vocabulary');
  });

  it('truncates from the left, keeping the last tokens', () => {
    expect(truncatePromptTokens([1, 2, 3, 4], 2)).toEqual([3, 4]);
    expect(truncatePromptTokens([1, 2], 5)).toEqual([1, 2]);
    expect(truncatePromptTokens([1, 2], undefined)).toEqual([1, 2]);
  });
});
