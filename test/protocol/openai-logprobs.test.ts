import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  GeneratedTokenReporter,
  chatLogprobContent,
  completionLogprobs,
  promptPositionReports,
  vllmPromptLogprobs,
  type PositionReport,
} from '../../src/protocol/openai-logprobs.js';
import { TokenTexts } from '../../src/protocol/token-texts.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';

const MODEL_DIR = new URL('../../models/stories260k/', import.meta.url);
const tokenizer = HfTokenizer.fromJson(
  JSON.parse(readFileSync(new URL('tokenizer.json', MODEL_DIR), 'utf8')),
  JSON.parse(readFileSync(new URL('tokenizer_config.json', MODEL_DIR), 'utf8')),
);
const id = (piece: string) => tokenizer.tokenToId(piece)!;

describe('TokenTexts', () => {
  it('names tokens by the text they add in context, leading spaces included', () => {
    const prompt = tokenizer.encode('Once upon a time', { addSpecialTokens: true });
    const texts = new TokenTexts(tokenizer, prompt, true);
    expect(texts.alternative(id('▁there'))).toBe(' there');
    expect(texts.alternative(id(','))).toBe(',');
    expect(texts.push(id(','))).toBe(',');
    expect(texts.push(id('▁there'))).toBe(' there');
  });

  it('gives a byte token that leaves a character unfinished no text, and the completing token all of it', () => {
    // "é" is UTF-8 C3 A9: two byte-fallback tokens in this vocabulary.
    const texts = new TokenTexts(tokenizer, tokenizer.encode('Hi', { addSpecialTokens: true }), true);
    expect(texts.alternative(id('<0xC3>'))).toBe('');
    expect(texts.push(id('<0xC3>'))).toBe('');
    expect(texts.push(id('<0xA9>'))).toBe('é');
  });
});

describe('completions logprobs object (vLLM 0.6 CompletionLogProbs)', () => {
  const reports: PositionReport[] = [
    { tokenId: 1, text: 'A', logprob: null, top: null },
    {
      tokenId: 7,
      text: ' cat',
      logprob: -0.5,
      top: [
        { tokenId: 8, text: ' dog', logprob: -0.2 },
        { tokenId: 7, text: ' cat', logprob: -0.5 },
        { tokenId: 9, text: ' cow', logprob: -3 },
      ],
    },
    { tokenId: 4, text: '!', logprob: -Infinity, top: [{ tokenId: 5, text: '.', logprob: -0.01 }] },
  ];

  it('lists tokens, offsets and logprobs; the dict holds the chosen token and up to n alternatives', () => {
    expect(completionLogprobs(reports, 2, 10)).toEqual({
      tokens: ['A', ' cat', '!'],
      text_offset: [10, 11, 15],
      token_logprobs: [null, -0.5, -9999],
      top_logprobs: [null, { ' cat': -0.5, ' dog': -0.2 }, { '!': -9999, '.': -0.01 }],
    });
  });

  it('holds just the chosen token for logprobs = 0, and n + 1 entries when it is not among the best n', () => {
    expect(completionLogprobs(reports.slice(1, 2), 0, 0).top_logprobs).toEqual([{ ' cat': -0.5 }]);
    const outsider = { ...reports[1], top: reports[1].top!.filter((t) => t.tokenId !== 7) };
    expect(Object.keys(completionLogprobs([outsider], 2, 0).top_logprobs[0]!)).toHaveLength(3);
  });

  it('reports the chat content list with bytes, alternatives best first', () => {
    const content = chatLogprobContent(reports.slice(1));
    expect(content[0]).toEqual({
      token: ' cat',
      logprob: -0.5,
      bytes: [32, 99, 97, 116],
      top_logprobs: [
        { token: ' dog', logprob: -0.2, bytes: [32, 100, 111, 103] },
        { token: ' cat', logprob: -0.5, bytes: [32, 99, 97, 116] },
        { token: ' cow', logprob: -3, bytes: [32, 99, 111, 119] },
      ],
    });
    expect(content[1].logprob).toBe(-9999);
  });
});

describe('prompt reports', () => {
  const prompt = tokenizer.encode('Once upon', { addSpecialTokens: true });

  it('names the first prompt token alone, the others in context, with rank and ranked alternatives', () => {
    const reports = promptPositionReports(
      { tokenizer, promptTokenIds: prompt, skipSpecialTokens: true },
      [
        null,
        { tokenId: prompt[1], logprob: -2, rank: 3, top: [{ tokenId: id('▁The'), logprob: -0.1 }] },
        { tokenId: prompt[2], logprob: -0.3, rank: 1, top: [{ tokenId: prompt[2], logprob: -0.3 }] },
      ],
    );
    expect(reports.map((r) => r.text)).toEqual(['<s>', 'Once', ' upon']);
    expect(reports[0].logprob).toBeNull();
    expect(reports[1].top).toEqual([{ tokenId: id('▁The'), logprob: -0.1, rank: 1, text: 'The' }]);
    expect(vllmPromptLogprobs(reports)).toEqual([
      null,
      {
        [prompt[1]]: { logprob: -2, rank: 3, decoded_token: 'Once' },
        [id('▁The')]: { logprob: -0.1, rank: 1, decoded_token: 'The' },
      },
      { [prompt[2]]: { logprob: -0.3, rank: 1, decoded_token: ' upon' } },
    ]);
  });

  it('reports generated tokens delta by delta in the prompt context', () => {
    const reporter = new GeneratedTokenReporter({ tokenizer, promptTokenIds: prompt, skipSpecialTokens: true });
    const first = reporter.report([id('▁a')], [-1], [[{ tokenId: id('▁a'), logprob: -1 }]]);
    const second = reporter.report([id('▁time')], [-0.5]);
    expect(first).toEqual([{ tokenId: id('▁a'), text: ' a', logprob: -1, top: [{ tokenId: id('▁a'), logprob: -1, text: ' a' }] }]);
    expect(second).toEqual([{ tokenId: id('▁time'), text: ' time', logprob: -0.5, top: null }]);
  });
});
